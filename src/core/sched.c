/*
 * The scheduling pass and its rules: pending jobs in policy order (within
 * quota first, escalated priorities, optional round-robin between queues),
 * queue caps, placement by strategy (gangs over several nodes when allowed),
 * preemption for jobs that cannot start, and an EASY backfill reservation
 * behind the first job that still cannot. Also node loss, cancel and the end
 * of failed attempts (retries with backoff).
 */
#include "core/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/backfill.h"
#include "core/gang.h"
#include "core/gpu_share.h"
#include "core/placement_image.h"
#include "core/placement_index.h"
#include "core/preempt.h"
#include "core/queue.h"

#include "core/core_banned.h"

void sched_config_defaults(struct sched_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->order = &order_priority;
    cfg->placement = &placement_binpack;
    placement_config_defaults(&cfg->placement_cfg);
    cfg->backfill = true;
    cfg->preemption = true;
    cfg->retry_backoff_ms = 10000;
    cfg->retry_backoff_max_ms = 600000;
    cfg->node_timeout_ms = 30000;
    cfg->explain = true;
}

void sched_init(struct scheduler *s, const struct sched_config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    order_keep_init(&s->kept);
    order_keep_init(&s->kept_claimed);
    sched_quiet_init(&s->quiet);
}

void sched_release(struct scheduler *s)
{
    if (!s)
        return;
    free(s->order);
    s->order = NULL;
    s->order_cap = s->norder = 0;
    order_keep_release(&s->kept);
    order_keep_release(&s->kept_claimed);
    sched_quiet_release(&s->quiet);
    preempt_pool_release(&s->preempt_pool);
    placement_index_release(s->index);
    free(s->index);
    s->index = NULL;
}

static int by_order_policy(const void *a, const void *b, void *ops)
{
    const struct order_ops *order = ops;
    const struct job *x = *(const struct job *const *)a, *y = *(const struct job *const *)b;
    /* Work within its project's quota comes before borrowing, whatever the policy. */
    if (x->in_quota != y->in_quota)
        return x->in_quota ? -1 : 1;
    return order->compare(x, y);
}

static void format_gpu_list(char *out, size_t size, const int *gpus, int n)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%d", i ? "," : "", gpus[i]);
}

/* Any node with the GPUs will do (no model, memory, MIG or pool rule). */
static bool any_node(const struct job *job)
{
    return job->gpu_model[0] == '\0' && job->gpu_memory_mib == 0 && job->mig[0] == '\0' &&
           (!job->rules || job->rules->npools == 0);
}

/* Jobs that may use any node, one node at a time: the only ones whose
 * failures say something about other jobs. */
static bool unconstrained(const struct job *job)
{
    return any_node(job) && job->max_nodes <= 1;
}

/* An earlier job asking for no more failed: so does job, unless with
 * preemption on it may preempt what that one could not. */
static bool dominating_failure(const struct failed_shape *shapes, int n, const struct job *job,
                               bool preempting)
{
    for (int i = 0; i < n; i++)
        if (job->gpus >= shapes[i].gpus && job->cpus >= shapes[i].cpus &&
            job->memory_mib >= shapes[i].memory_mib &&
            (!preempting || (job->effective_priority <= shapes[i].priority &&
                             (!job->in_quota || shapes[i].in_quota))))
            return true;
    return false;
}

/* Whether one ready node is big enough for job (GPUs, CPUs and memory
 * together): a job that none could ever hold must get that answer rather
 * than "waiting". */
static bool fits_a_ready_node(const struct cluster *c, const struct job *job)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        if (n->state == NODE_READY && n->ngpus >= job->gpus &&
            (n->cpus <= 0 || job->cpus <= n->cpus) &&
            (n->memory_mib <= 0 || job->memory_mib <= n->memory_mib))
            return true;
    }
    return false;
}

/* Whether job certainly cannot start now for want of free GPUs: fewer
 * nodes have its share free than it needs, on one node and in every split
 * a gang could take. Not for jobs that share a GPU (they need none free);
 * false when no index says. */
static bool short_of_free_gpus(const struct cluster *c, const struct job *job)
{
    if (job->gpus <= 0 || gpu_job_wants_slice(job) ||
        placement_index_nodes_with_free(c, job->gpus) != 0)
        return false;
    for (int m = gang_next_split(job, 1); m; m = gang_next_split(job, m)) {
        int nodes = placement_index_nodes_with_free(c, job->gpus / m);
        if (nodes < 0 || nodes >= m)
            return false;
    }
    return true;
}

static int queue_slot(const struct queue_set *qs, struct job *job)
{
    if (!qs)
        return -1;
    const struct queue_config *q = queue_of_job_remember(qs, job);
    return q ? (int)(q - qs->queues) : -1;
}

static void count_queue_usage(const struct queue_set *qs, const struct cluster *c,
                              struct queue_usage *u)
{
    memset(u, 0, sizeof *u);
    if (!qs)
        return;
    for (size_t i = 0; i < c->njobs; i++) {
        struct job *job = &c->jobs[i];
        int q = job_state_is_on_node(job->state) ? queue_slot(qs, job) : -1;
        if (q >= 0) {
            u->jobs[q]++;
            u->gpus[q] += job->gpus;
        }
    }
}

/* Whether a queue cap keeps job waiting; with explain, says so in its
 * wait cause (the queue is the job's own, so its name is job->queue). */
static bool queue_cap_reached(const struct queue_set *qs, const struct queue_usage *u, int q,
                              struct job *job, bool explain)
{
    if (q < 0)
        return false;
    const struct queue_config *cfg = &qs->queues[q];
    if (cfg->max_running_jobs > 0 && u->jobs[q] >= cfg->max_running_jobs) {
        if (explain)
            wait_reason_set(job, WAIT_QUEUE_JOBS, cfg->max_running_jobs, 0, 0, NULL);
        return true;
    }
    if (cfg->max_running_gpus > 0 && u->gpus[q] + job->gpus > cfg->max_running_gpus) {
        if (explain)
            wait_reason_set(job, WAIT_QUEUE_GPUS, cfg->max_running_gpus, u->gpus[q], 0, NULL);
        return true;
    }
    return false;
}

/* Exponential backoff after a failed attempt: base, 2×base, 4×base, ... capped. */
static int64_t retry_not_before_ms(const struct sched_config *cfg, const struct job *job)
{
    if (!job->last_failure_ms || cfg->retry_backoff_ms <= 0)
        return 0;
    int failures = job->attempt - job->free_attempts;
    int shift = failures > 1 ? failures - 1 : 0;
    int64_t delay = cfg->retry_backoff_ms << (shift < 20 ? shift : 20);
    if (cfg->retry_backoff_max_ms > 0 && delay > cfg->retry_backoff_max_ms)
        delay = cfg->retry_backoff_max_ms;
    return job->last_failure_ms + delay;
}

static int by_turn(const void *a, const void *b)
{
    const struct job *x = *(const struct job *const *)a, *y = *(const struct job *const *)b;
    if (x->in_quota != y->in_quota)
        return x->in_quota ? -1 : 1;
    if (x->effective_priority != y->effective_priority)
        return x->effective_priority > y->effective_priority ? -1 : 1;
    if (x->queue_turn != y->queue_turn)
        return x->queue_turn < y->queue_turn ? -1 : 1;
    return (x->order_pos > y->order_pos) - (x->order_pos < y->order_pos);
}

/* Round-robin between queues of equal priority: the k-th job of each queue
 * (in policy order) goes before the (k+1)-th of any, so a long queue does
 * not keep an equally important one waiting. */
static void interleave_queues(struct scheduler *s, size_t n)
{
    const struct queue_set *qs = s->cfg.queues;
    int turns[TIDE_MAX_QUEUES + 1] = {0};
    int last_priority = 0;
    for (size_t i = 0; i < n; i++) {
        struct job *job = s->order[i];
        if (i == 0 || job->effective_priority != last_priority)
            memset(turns, 0, sizeof turns); /* turns count within one priority */
        last_priority = job->effective_priority;
        const struct queue_config *q = qs ? queue_of_job_remember(qs, job) : NULL;
        int slot = q ? (int)(q - qs->queues) : TIDE_MAX_QUEUES;
        job->queue_turn = turns[slot]++;
        job->order_pos = (int)i;
    }
    qsort(s->order, n, sizeof *s->order, by_turn);
}

/* Readies one job for this pass: false when it may not be placed now
 * (held, or backing off: then *backoff), else true with its effective
 * priority and quota class set. */
static bool take_pending(struct scheduler *s, struct job *job, int64_t now_ms, bool *backoff)
{
    bool explain = s->cfg.explain;
    *backoff = false;
    if (job->state != JOB_PENDING)
        return false;
    if (job->held || job->on_hold ||
        (s->cfg.budgets &&
         budget_holds_job(s->cfg.budgets, job, explain ? wait_reason_text(job) : NULL))) {
        job->not_before_ms = 0; /* held, not backing off: the ETA plan leaves it out */
        return false;
    }
    job->reserved_start_ms = 0;
    job->reserved_node_id = 0;
    job->not_before_ms = retry_not_before_ms(&s->cfg, job);
    bool deleted_node = job->restart_after_ms > job->not_before_ms;
    if (deleted_node)
        job->not_before_ms = job->restart_after_ms;
    if (job->not_before_ms > now_ms) {
        if (explain)
            wait_reason_set(job, deleted_node ? WAIT_DELETED_NODE : WAIT_RETRY, 0, 0,
                            (job->not_before_ms - now_ms + 999) / 1000, NULL);
        *backoff = true;
        return false;
    }
    const struct queue_config *q = s->cfg.queues ? queue_of_job_remember(s->cfg.queues, job) : NULL;
    job->effective_priority = queue_effective_priority(q, job, now_ms);
    if (s->quiet.wanted) { /* only passes over new jobs read it */
        int64_t next = queue_next_escalation_ms(q, job, now_ms);
        if (next < s->quiet_until_ms)
            s->quiet_until_ms = next;
    }
    if (s->cfg.fairshare)
        fairshare_classify(s->cfg.fairshare, job);
    else
        job->in_quota = true, job->share_key = 0;
    s->gpuless += job->gpus <= 0 || gpu_job_wants_slice(job);
    return true;
}

/* Collects the jobs this pass may place (of every job, or of those with the
 * given ids when ids is not NULL), with their effective priorities; counts
 * those backing off into *nbackoff. */
static size_t collect_pending(struct scheduler *s, struct cluster *c, const int64_t *ids,
                              size_t nids, int64_t now_ms, size_t *nbackoff)
{
    size_t n = 0, ncandidates = ids ? nids : c->njobs;
    s->gpuless = 0;
    for (size_t i = 0; i < ncandidates; i++) {
        struct job *job = ids ? cluster_find_job(c, ids[i]) : &c->jobs[i];
        bool backoff;
        if (job && take_pending(s, job, now_ms, &backoff))
            s->order[n++] = job;
        else if (job)
            *nbackoff += backoff;
    }
    order_keep_sort(&s->kept, c, s->order, n, by_order_policy, (void *)s->cfg.order);
    /* Each sort keeps its own last order: sharing one, each would find the
     * other's and fall back to a full sort every pass. */
    if (n > 1 && s->cfg.fairshare && fairshare_claim_in_order(s->cfg.fairshare, s->order, n))
        order_keep_sort(&s->kept_claimed, c, s->order, n, by_order_policy, (void *)s->cfg.order);
    if (n > 1 && s->cfg.queue_round_robin)
        interleave_queues(s, n);
    return n;
}

static int push_start(struct scheduler *s, struct cluster *c, struct job *job,
                      const struct placement_choice *choice, int64_t now_ms,
                      struct action_list *out)
{
    cluster_assign(c, job, choice->node, choice->gpu_index, choice->ngpus);
    if (s->cfg.fairshare)
        fairshare_note_start(s->cfg.fairshare, job);
    job->state = JOB_STARTING;
    job->attempt++;
    job->start_ms = now_ms;
    /* idle reclaim watches each attempt afresh: an earlier one's idle
     * clock would stop this one at its first heartbeat */
    job->idle_since_ms = 0;
    job->idle_warned = false;
    job->reclaim_requested = false;
    wait_reason_text(job)[0] = '\0';
    struct action a = {.type = ACTION_START, .job_id = job->id, .attempt = job->attempt,
                       .node_id = choice->node->id, .state = JOB_STARTING, .exit_code = -1};
    char gpus[128];
    format_gpu_list(gpus, sizeof gpus, choice->gpu_index, choice->ngpus);
    snprintf(a.reason, sizeof a.reason, "placed on %s%s%.80s", choice->node->name,
             choice->ngpus ? " GPUs " : "", gpus);
    return action_list_push(out, &a) ? 0 : TIDE_ENOMEM;
}

/* The priority job preempts with against any job: a job requeued by a
 * preemption preempts its preemptor without its escalation (preempt.c), so
 * what it failed to find says nothing about jobs above its own priority. */
static int shape_priority(const struct job *job)
{
    return job->preempted_for ? job->priority : job->effective_priority;
}

/* A job for which preemption found no victims: one that asks for at least
 * as much at no higher priority finds none either; a gang job, one of its
 * very shape (its splits are its own). */
struct victimless_shape {
    int gpus, cpus, priority, max_nodes;
    int64_t memory_mib;
};

static bool plain_gang(const struct job *job)
{
    return any_node(job) && job->max_nodes > 1;
}

static bool preemption_hopeless(const struct victimless_shape *shapes, int n, const struct job *job)
{
    if (job->in_quota || (!unconstrained(job) && !plain_gang(job)))
        return false; /* may reclaim borrowed GPUs: no shortcut */
    for (int i = 0; i < n; i++) {
        const struct victimless_shape *v = &shapes[i];
        if (job->effective_priority > v->priority || job->cpus < v->cpus ||
            job->memory_mib < v->memory_mib)
            continue;
        if (job->max_nodes > 1 ? job->max_nodes == v->max_nodes && job->gpus == v->gpus
                               : v->max_nodes <= 1 && job->gpus >= v->gpus)
            return true;
    }
    return false;
}

/* Starts a gang job on every node gang_choose picked. */
static int push_gang_start(struct scheduler *s, struct cluster *c, struct job *job,
                           int64_t now_ms, struct action_list *out)
{
    int rc = push_start(s, c, job, &s->gang.parts[0], now_ms, out);
    char nodes[TIDE_REASON_MAX];
    size_t used = 0;
    nodes[0] = '\0';
    for (int i = 1; !rc && i < s->gang.nparts; i++) {
        const struct placement_choice *part = &s->gang.parts[i];
        cluster_assign_part(c, job, part->node, part->gpu_index, part->ngpus);
        if (used < sizeof nodes)
            used += (size_t)snprintf(nodes + used, sizeof nodes - used, "%s%.40s", i > 1 ? "," : "",
                                     part->node->name);
    }
    if (!rc && s->gang.nparts > 1) {
        struct action *a = &out->items[out->len - 1];
        snprintf(a->reason, sizeof a->reason, "placed on %d nodes: %.40s,%.60s", s->gang.nparts,
                 s->gang.parts[0].node->name, nodes);
    }
    return rc;
}

/* Stops victims for job. */
static void preempt_victims(struct job *job, struct job *const *victims, int n,
                            struct action_list *out)
{
    for (int i = 0; i < n; i++) {
        struct job *v = victims[i];
        struct action *a = action_push_preempt(out, v);
        if (!a) /* out of memory: it keeps running, a later pass asks again */
            continue;
        v->preempted_for = job->id; /* its claim does not give way to it */
        snprintf(a->reason, sizeof a->reason, "preempted by job %lld", (long long)job->id);
        snprintf(v->requeue_reason, sizeof v->requeue_reason, "%s", a->reason);
    }
}

/* try_preemption for a gang job that no one node can hold. */
static bool try_gang_preemption(struct scheduler *s, struct cluster *c, struct job *job,
                                int64_t now_ms, struct action_list *out)
{
    struct preempt_gang_plan plan;
    enum preempt_result r =
        preempt_plan_gang(&s->cfg.placement_cfg, &s->preempt_pool, c, job, &plan);
    if (r == PREEMPT_NONE)
        return false;
    /* its shares' nodes are its own, as for one node */
    int64_t ids[TIDE_MAX_GANG_NODES];
    for (int i = 0; i < plan.nnodes; i++)
        ids[i] = plan.nodes[i]->id;
    preempt_claim_note(&s->claims, c, job, ids, plan.nnodes, now_ms);
    preempt_claim_hold_new(&s->claims, c, job->id);
    preempt_victims(job, plan.victims, plan.nvictims, out);
    if (s->cfg.explain && r == PREEMPT_PENDING)
        snprintf(wait_reason_text(job), sizeof job->wait_reason,
                 "waiting for preempted jobs to stop");
    else if (s->cfg.explain)
        snprintf(wait_reason_text(job), sizeof job->wait_reason,
                 "preempting %d job%s for its %d GPUs on %d nodes (%.40s, ...)", plan.nvictims,
                 plan.nvictims == 1 ? "" : "s", job->gpus, plan.nnodes, plan.nodes[0]->name);
    return true;
}

/* Tries to make room for job by preempting; true when it is handled
 * (victims chosen now, or earlier ones still stopping). */
static bool try_preemption(struct scheduler *s, struct cluster *c, struct job *job,
                           int64_t now_ms, struct action_list *out)
{
    struct preempt_plan plan;
    enum preempt_result r = preempt_plan(&s->cfg.placement_cfg, &s->preempt_pool, job, &plan);
    if (r == PREEMPT_NONE && job->max_nodes > 1)
        return try_gang_preemption(s, c, job, now_ms, out);
    if ((r == PREEMPT_PENDING || r == PREEMPT_PLANNED) && plan.node) {
        /* what its victims free, and what is free there now, is its own */
        preempt_claim_note(&s->claims, c, job, &plan.node->id, 1, now_ms);
        preempt_claim_hold_new(&s->claims, c, job->id);
    }
    if (r == PREEMPT_PENDING) {
        if (s->cfg.explain)
            snprintf(wait_reason_text(job), sizeof job->wait_reason,
                     "waiting for preempted jobs to stop");
        return true;
    }
    if (r != PREEMPT_PLANNED)
        return false;
    preempt_victims(job, plan.victims, plan.nvictims, out);
    if (s->cfg.explain)
        snprintf(wait_reason_text(job), sizeof job->wait_reason, "preempting %d job%s on %s",
                 plan.nvictims, plan.nvictims == 1 ? "" : "s", plan.node->name);
    return true;
}

/* Builds the placement index for this pass (or, with keep_index, keeps the
 * one still attached from the last); without memory for it the strategies
 * scan every node instead, which is slower but the same. */
static void attach_index(struct scheduler *s, struct cluster *c)
{
    bool loads = s->cfg.placement->load_index;
    if (s->cfg.keep_index && s->index && c->index == s->index &&
        placement_index_for(c, s->cfg.placement->node_order) &&
        (!loads || placement_index_load(c, &s->cfg.placement_cfg)))
        return;
    c->index = NULL;
    if (!s->index && !(s->index = calloc(1, sizeof *s->index)))
        return;
    if (placement_index_build(s->index, c, s->cfg.placement->node_order,
                              loads ? &s->cfg.placement_cfg : NULL) == 0)
        c->index = s->index;
}

/* Detaches the index at the end of a pass unless it is to be kept; its
 * shape memo lasts one pass either way. */
static void detach_index(struct scheduler *s, struct cluster *c)
{
    if (s->index)
        placement_index_memo_stop(s->index);
    if (!s->cfg.keep_index)
        c->index = NULL;
}

/* The last shape of job passed over behind a failure (dominating_failure):
 * whether a ready node could ever hold it. Within a pass nodes keep their
 * state, so a deep queue of one shape answers once rather than once per
 * job (its reason, WAIT_ONE_NODE, is worded only when read). */
struct dominated_memo {
    bool valid, fits;
    int gpus, cpus;
    int64_t memory_mib;
};

/* fits_a_ready_node for an unconstrained job. */
static bool dominated_fits(struct dominated_memo *memo, const struct cluster *c,
                           const struct job *job)
{
    if (memo->valid && memo->gpus == job->gpus && memo->cpus == job->cpus &&
        memo->memory_mib == job->memory_mib)
        return memo->fits;
    memo->valid = true;
    memo->gpus = job->gpus;
    memo->cpus = job->cpus;
    memo->memory_mib = job->memory_mib;
    memo->fits = fits_a_ready_node(c, job);
    return memo->fits;
}

/* A pass's walk down the order: what it has learnt so far and what it
 * holds. Kept after a pass that changed nothing (sched_quiet.h), so the next
 * may go on from where it ended. */
struct pass_state {
    struct dominated_memo dominated;
    struct failed_shape failed[FAILED_SHAPES];
    int nfailed;
    struct queue_usage usage;
    struct backfill_reservation reservation;
    bool reservation_tried;
    struct victimless_shape no_victims[FAILED_SHAPES];
    int nno_victims;
    int placed;
    const struct job *stopped_at; /* strict: the blocked job the pass stopped at */
    /* The reservation's GPUs are let go for a job that ends before it and
     * held again after; between two such jobs (nothing to preempt) they
     * stay let go, which leaves the cluster as holding and letting go
     * again would. */
    bool hold_deferred;
    bool broke; /* the walk ended before the last job (nothing left to say) */
};

/* Room for need jobs in s->order. 0 or TIDE_ENOMEM. */
static int order_reserve(struct scheduler *s, size_t need)
{
    if (need <= s->order_cap)
        return 0;
    struct job **grown = realloc(s->order, need * sizeof *grown);
    if (!grown)
        return TIDE_ENOMEM;
    s->order = grown;
    s->order_cap = need;
    return 0;
}

/* A job of queue slot q (-1: none) was started: it counts against the
 * queue's caps; one that started behind the reservation (short_enough)
 * leaves its GPUs let go until a job that is not. */
static void note_started(struct pass_state *st, int q, const struct job *job, bool short_enough)
{
    if (short_enough)
        st->hold_deferred = true;
    if (q >= 0) {
        st->usage.jobs[q]++;
        st->usage.gpus[q] += job->gpus;
    }
    st->placed++;
}

/* Marks job as holding reservation r (reserved_start_ms 0: start unknown)
 * and, when explaining, says so in its wait reason. */
static void note_reservation(struct job *job, const struct backfill_reservation *r, bool explain,
                             int64_t now_ms)
{
    bool known = r->start_ms != BACKFILL_START_UNKNOWN;
    job->reserved_start_ms = known ? r->start_ms : 0;
    job->reserved_node_id = r->node->id;
    if (!explain)
        return;
    char where[72];
    if (r->nparts > 1)
        snprintf(where, sizeof where, "%d nodes (%.40s, ...)", r->nparts, r->node->name);
    else
        snprintf(where, sizeof where, "%.64s", r->node->name);
    const char *gpus = job->gpus == 1 ? "GPU" : "GPUs";
    if (known)
        snprintf(wait_reason_text(job), sizeof job->wait_reason,
                 "reserved %d %s on %s from %lld s from now (backfill)", job->gpus, gpus, where,
                 (long long)((r->start_ms - now_ms + 999) / 1000));
    else
        snprintf(wait_reason_text(job), sizeof job->wait_reason,
                 "reserved %d %s on %s, start unknown: the jobs there give no runtime (backfill)",
                 job->gpus, gpus, where);
}

/* Walks s->order[from..to) with st, placing, preempting, reserving and
 * explaining. Returns 0 or TIDE_ENOMEM. */
static int walk_jobs(struct scheduler *s, struct cluster *c, struct pass_state *st, size_t from,
                     size_t to, int64_t now_ms, struct action_list *out)
{
    bool explain = s->cfg.explain;
    bool strict = s->cfg.order->strict;
    for (size_t i = from; i < to; i++) {
        struct job *job = s->order[i];
        /* past a strict order's blocked job only claimants go on: the job
         * blocked may be a victim its claimant's node is held from */
        if (st->stopped_at && !(s->claims.n && preempt_claim_of(&s->claims, job->id))) {
            if (!explain && !s->claims.n) {
                st->broke = true;
                break;
            }
            if (explain)
                wait_reason_set(job, WAIT_BEHIND, 0, 0, st->stopped_at->id, s->cfg.order->name);
            continue;
        }
        /* Its claimed node is free to it alone; what jobs before it could
         * not get there says nothing of what it can (no shortcuts below).
         * A job that outranks a claimant (not its victim) is not held off. */
        bool claimed = s->claims.n && preempt_claim_take(&s->claims, c, job);
        if (s->claims.n && !claimed)
            preempt_claims_yield(&s->claims, c, job);
        bool short_enough = st->reservation.active && backfill_fits_before(&st->reservation, job, now_ms);
        if (st->hold_deferred && !short_enough) {
            backfill_hold(c, &st->reservation, true);
            st->hold_deferred = false;
        }
        /* With nothing left to write or reserve, no GPU free anywhere and
         * every job left needing one, none of them can start. */
        if (!explain && !s->gpuless && !s->preempt_pool.n && !backfill_lends(&st->reservation) &&
            !s->claims.n && (!s->cfg.backfill || st->reservation_tried) &&
            placement_index_nodes_with_free(c, 1) == 0) {
            st->broke = true;
            break;
        }
        if (job->gpus <= 0 || gpu_job_wants_slice(job))
            s->gpuless--;
        /* Once a job that cannot start has nothing left to get (no reason
         * to write, nothing to preempt, the reservation handed out), one
         * that no node has the free GPUs for is passed over unasked. */
        if (!explain && !s->preempt_pool.n && (!s->cfg.backfill || st->reservation_tried) &&
            !(st->reservation.active && backfill_fits_before(&st->reservation, job, now_ms)) &&
            short_of_free_gpus(c, job)) {
            if (strict && !st->reservation.active)
                st->stopped_at = job;
            continue;
        }
        int q = queue_slot(s->cfg.queues, job);
        if (queue_cap_reached(s->cfg.queues, &st->usage, q, job, explain))
            continue;
        /* Without explanations the node check is moot: a dominated job that
         * no node could hold gets NEVER below, which ends the same way. */
        if (!claimed && unconstrained(job) &&
            dominating_failure(st->failed, st->nfailed, job, s->preempt_pool.n > 0) &&
            (!explain || dominated_fits(&st->dominated, c, job))) {
            if (explain)
                wait_reason_set(job, WAIT_ONE_NODE, 0, 0, 0, NULL);
            if (strict && !st->reservation.active)
                st->stopped_at = job;
            continue;
        }
        /* Behind a reservation, a job that would outlast it must not use its GPUs. */
        if (short_enough && !st->hold_deferred)
            backfill_hold(c, &st->reservation, false);
        st->hold_deferred = false;
        /* Placement words its own reasons, straight into the job's. */
        struct wait_why job_why = wait_why_of(job);
        const struct wait_why *why = explain ? &job_why : NULL;
        if (why)
            wait_why_text(why)[0] = '\0';
        struct placement_choice choice;
        enum placement_result r =
            s->cfg.placement->choose(&s->cfg.placement_cfg, c, job, &choice, why);
        if (r != PLACEMENT_FOUND && job->max_nodes > 1) {
            enum placement_result g =
                gang_choose(s->cfg.placement, &s->cfg.placement_cfg, c, job, &s->gang, why);
            if (g == PLACEMENT_FOUND) {
                if (push_gang_start(s, c, job, now_ms, out) != 0)
                    return TIDE_ENOMEM;
                note_started(st, q, job, short_enough);
                continue;
            }
            if (g == PLACEMENT_NOT_NOW || r == PLACEMENT_NEVER)
                r = g;
        }
        if (r == PLACEMENT_FOUND) {
            placement_prefer_image(&s->cfg.placement_cfg, c, job, &choice,
                                   s->cfg.placement->node_order);
            if (push_start(s, c, job, &choice, now_ms, out) != 0)
                return TIDE_ENOMEM;
            note_started(st, q, job, short_enough);
            continue;
        }
        if (short_enough && s->preempt_pool.n)
            backfill_hold(c, &st->reservation, true); /* preemption below sees what is held */
        else if (short_enough)
            st->hold_deferred = true;
        if (r != PLACEMENT_NOT_NOW)
            continue;
        if (s->preempt_pool.n &&
            (claimed || !preemption_hopeless(st->no_victims, st->nno_victims, job))) {
            if (try_preemption(s, c, job, now_ms, out)) {
                if (strict && !st->reservation.active)
                    st->stopped_at = job;
                continue;
            }
            if (!job->in_quota && (unconstrained(job) || plain_gang(job)) &&
                st->nno_victims < FAILED_SHAPES)
                st->no_victims[st->nno_victims++] =
                    (struct victimless_shape){.gpus = job->gpus,
                                              .cpus = job->cpus,
                                              .priority = shape_priority(job),
                                              .max_nodes = job->max_nodes,
                                              .memory_mib = job->memory_mib};
        }
        if (!backfill_lends(&st->reservation) && unconstrained(job) && st->nfailed < FAILED_SHAPES)
            st->failed[st->nfailed++] = (struct failed_shape){.gpus = job->gpus,
                                                              .cpus = job->cpus,
                                                              .memory_mib = job->memory_mib,
                                                              .priority = shape_priority(job),
                                                              .in_quota = job->in_quota};
        /* EASY: only the first job that cannot start gets a reservation. */
        if (s->cfg.backfill && !st->reservation_tried && (st->reservation_tried = true) &&
            backfill_reserve(&s->cfg.placement_cfg, c, job, now_ms, &st->reservation)) {
            note_reservation(job, &st->reservation, explain, now_ms);
            backfill_hold(c, &st->reservation, true);
        }
        /* Strict order: nothing behind a blocked job starts, unless EASY
         * backfill reserved for it (then only around the reservation). */
        if (strict && !st->reservation.active)
            st->stopped_at = job;
    }
    return 0;
}

/* walk_jobs with the preemption claims' nodes held for their jobs. */
static int walk_order(struct scheduler *s, struct cluster *c, struct pass_state *st, size_t from,
                      size_t to, int64_t now_ms, struct action_list *out)
{
    if (s->claims.n)
        preempt_claims_hold(&s->claims, c, s->cfg.budgets, now_ms);
    int rc = walk_jobs(s, c, st, from, to, now_ms, out);
    preempt_claims_unhold(&s->claims, c);
    return rc;
}

/* After a pass: whether the next may look at new jobs only
 * (sched_pass_new), and what it needs to. nodes_kept: q's words are the
 * nodes as they are now (sched_pass_new compared them at its start, and a
 * pass that stays quiet changes no node), so they are not taken again. */
static void note_quiet(struct scheduler *s, struct cluster *c, const struct pass_state *st,
                       bool every_job, size_t nbackoff, bool nodes_kept)
{
    struct sched_quiet *q = &s->quiet;
    /* A reservation with an unknown start is the same again on the same
     * nodes and jobs, whenever it is made: the next pass may hold it anew. */
    bool reservation_kept = !backfill_lends(&st->reservation) && !s->claims.n;
    q->valid = q->wanted && every_job && !st->placed && reservation_kept && !st->broke &&
               !s->preempt_pool.n && !nbackoff && s->kept.n == s->norder &&
               sched_quiet_rules_timeless(s->cfg.fairshare != NULL, s->cfg.budgets != NULL,
                                          s->cfg.queue_round_robin);
    if (!q->valid || (!nodes_kept && sched_quiet_nodes_take(q, c) != 0))
        return;
    q->njobs = c->njobs;
    q->jobs_removed = c->jobs_removed;
    q->tail_id = c->njobs ? c->jobs[c->njobs - 1].id : 0;
    q->jobs_base = c->jobs;
    memcpy(q->failed, st->failed, sizeof q->failed);
    q->nfailed = st->nfailed;
    q->reservation_tried = st->reservation_tried;
    q->reservation = st->reservation;
    q->stopped_at_id = st->stopped_at ? st->stopped_at->id : 0;
    q->usage = st->usage;
    q->until_ms = s->quiet_until_ms;
}

static int pass(struct scheduler *s, struct cluster *c, const int64_t *ids, size_t nids,
                int64_t now_ms, struct action_list *out)
{
    size_t need = ids ? nids : c->njobs;
    s->norder = 0;
    s->quiet.valid = false;
    if (order_reserve(s, need) != 0)
        return TIDE_ENOMEM;
    if (s->cfg.fairshare)
        fairshare_update(s->cfg.fairshare, c, now_ms);
    size_t nbackoff = 0;
    s->quiet_until_ms = INT64_MAX;
    size_t npending = collect_pending(s, c, ids, nids, now_ms, &nbackoff);
    s->norder = npending;
    attach_index(s, c);
    if (c->index)
        placement_index_memo_start(c->index); /* nodes keep their shapes until the pass ends */
    struct pass_state st = {.reservation = {.active = false}};
    count_queue_usage(s->cfg.queues, c, &st.usage);
    s->preempt_pool.n = 0;
    if (s->cfg.preemption && preempt_pool_build(&s->preempt_pool, c) != 0) {
        detach_index(s, c);
        return TIDE_ENOMEM;
    }
    if (walk_order(s, c, &st, 0, npending, now_ms, out) != 0) {
        backfill_hold(c, &st.reservation, false);
        detach_index(s, c);
        return TIDE_ENOMEM;
    }
    backfill_hold(c, &st.reservation, false);
    note_quiet(s, c, &st, ids == NULL, nbackoff, false);
    detach_index(s, c);
    return st.placed;
}

int sched_pass(struct scheduler *s, struct cluster *c, int64_t now_ms, struct action_list *out)
{
    return pass(s, c, NULL, 0, now_ms, out);
}

int sched_pass_ids(struct scheduler *s, struct cluster *c, const int64_t *ids, size_t nids,
                   int64_t now_ms, struct action_list *out)
{
    static const int64_t none[1];
    return pass(s, c, ids ? ids : none, ids ? nids : 0, now_ms, out);
}

/* Whether the jobs appended since the last pass are all that changed in
 * them: none left (a job leaving may move another into its place), the
 * array only grew, in rising ids, and none of the new jobs waits on
 * others. */
static bool only_appended(const struct sched_quiet *q, const struct cluster *c)
{
    if (c->jobs_removed != q->jobs_removed || c->njobs < q->njobs ||
        (q->njobs && c->jobs[q->njobs - 1].id != q->tail_id))
        return false;
    int64_t last_id = q->tail_id;
    for (size_t i = q->njobs; i < c->njobs; i++) {
        const struct job *job = &c->jobs[i];
        if (job->id <= last_id || job->held)
            return false;
        last_id = job->id;
    }
    return true;
}

int sched_pass_new(struct scheduler *s, struct cluster *c, int64_t now_ms, struct action_list *out)
{
    struct sched_quiet *q = &s->quiet;
    q->wanted = true;
    if (!q->valid || now_ms >= q->until_ms || s->kept.n != s->norder || !only_appended(q, c) ||
        !sched_quiet_nodes_same(q, c))
        return TIDE_ECONFLICT;
    size_t nold = s->norder, need = nold + (c->njobs - q->njobs);
    if (order_reserve(s, need) != 0)
        return TIDE_ENOMEM;
    /* The array moved as it grew: the old order's pointers, anew. */
    if (c->jobs != q->jobs_base && !order_keep_jobs(&s->kept, c, s->order))
        return TIDE_ECONFLICT;
    q->jobs_base = c->jobs;
    s->gpuless = 0;
    s->quiet_until_ms = q->until_ms;
    size_t n = nold, nbackoff = 0;
    for (size_t i = q->njobs; i < c->njobs; i++) {
        bool backoff;
        if (take_pending(s, &c->jobs[i], now_ms, &backoff))
            s->order[n++] = &c->jobs[i];
        nbackoff += backoff;
    }
    void *order = (void *)s->cfg.order;
    if (n - nold > 1)
        qsort_r(s->order + nold, n - nold, sizeof *s->order, by_order_policy, order);
    if (nold && n > nold && by_order_policy(&s->order[nold - 1], &s->order[nold], order) >= 0)
        return TIDE_ECONFLICT; /* a new job goes before an earlier one */
    order_keep_append(&s->kept, c, s->order + nold, n - nold);
    s->norder = n;
    q->valid = false;
    attach_index(s, c);
    if (c->index)
        placement_index_memo_start(c->index);
    /* On from where the last pass ended; it had nothing to preempt, and
     * nothing has started since. */
    struct pass_state st = {.reservation = {.active = false}};
    memcpy(st.failed, q->failed, sizeof st.failed);
    st.nfailed = q->nfailed;
    st.usage = q->usage;
    st.reservation_tried = q->reservation_tried;
    st.reservation = q->reservation;
    backfill_hold(c, &st.reservation, true);
    st.stopped_at = q->stopped_at_id ? cluster_find_job(c, q->stopped_at_id) : NULL;
    s->preempt_pool.n = 0;
    if (walk_order(s, c, &st, nold, n, now_ms, out) != 0) {
        backfill_hold(c, &st.reservation, false);
        detach_index(s, c);
        return TIDE_ENOMEM;
    }
    backfill_hold(c, &st.reservation, false);
    note_quiet(s, c, &st, true, nbackoff, true);
    detach_index(s, c);
    return st.placed;
}

void sched_fail_attempt(struct cluster *c, struct job *job, enum job_state passed_through,
                        enum job_state final_state, const char *failure, int exit_code,
                        int signal, int64_t now_ms, struct action_list *out)
{
    struct action a = {.job_id = job->id, .attempt = job->attempt, .node_id = job->node_id,
                       .exit_code = exit_code, .signal = signal};
    cluster_unassign(c, job);
    job->requeue_reason[0] = '\0'; /* it was this attempt's */
    int64_t ran_ms = job->start_ms > 0 && now_ms > job->start_ms ? now_ms - job->start_ms : 0;
    job->attained_gpu_ms += (int64_t)job->gpus * ran_ms;
    job->start_ms = 0;
    bool lost = passed_through == JOB_LOST && final_state == JOB_FAILED;
    if (!lost || ran_ms >= SCHED_LOST_FRESH_MS)
        job->lost_attempts = 0; /* losses count in a row */
    if (job->cancel_requested) {
        a.type = ACTION_FINISH;
        a.state = JOB_CANCELLED;
        snprintf(a.reason, sizeof a.reason, "cancelled (%s)", failure);
    } else if (job->state == JOB_PREEMPTED) {
        /* Preemption is not the job's fault: it uses up no retry. */
        job->preemptions++;
        job->free_attempts++;
        a.type = ACTION_REQUEUE;
        a.state = JOB_PREEMPTED;
        snprintf(a.reason, sizeof a.reason, "%s", failure);
        job->state = JOB_PENDING;
    } else if (lost && job->lost_attempts >= SCHED_MAX_LOST_ATTEMPTS) {
        a.type = ACTION_FINISH;
        a.state = JOB_FAILED;
        snprintf(a.reason, sizeof a.reason, "%.100s; lost %d times in a row: not requeued again",
                 failure, job->lost_attempts);
    } else if (lost) {
        /* Nor is a node's death or an agent losing the task: requeue at once,
         * using no retry. */
        job->free_attempts++;
        job->lost_attempts++;
        a.type = ACTION_REQUEUE;
        a.state = JOB_LOST;
        snprintf(a.reason, sizeof a.reason, "%s; requeued without using a retry", failure);
        job->state = JOB_PENDING;
    } else if (final_state == JOB_FAILED && job->attempt - job->free_attempts <= job->retries) {
        a.type = ACTION_REQUEUE;
        a.state = passed_through;
        snprintf(a.reason, sizeof a.reason, "%s; retry %d of %d", failure,
                 job->attempt - job->free_attempts, job->retries);
        job->state = JOB_PENDING;
        if (passed_through == JOB_FAILED)
            job->last_failure_ms = now_ms; /* node loss is retried at once */
    } else {
        a.type = ACTION_FINISH;
        a.state = final_state;
        snprintf(a.reason, sizeof a.reason, "%s", failure);
    }
    action_list_push(out, &a);
    if (a.type == ACTION_FINISH)
        cluster_remove_job(c, job->id);
}

/* node_id, one node of a gang job, was lost. Its tasks on the other nodes
 * may still run there, on their GPUs and its checkpoint directory: they
 * keep their GPUs and are told to stop (the gang-failed path, reconcile.c),
 * and the attempt is requeued as lost once the last has exited or its node
 * is lost too. False when no other task is left (the caller ends the
 * attempt now). */
static bool lose_gang_part(struct job *job, int64_t node_id, struct action_list *out)
{
    if (job->nparts == 0 || job_mark_part_exited(job, node_id))
        return false;
    if (!job->gang_failed) {
        job->gang_failed = true;
        job->gang_lost = true;
        job->gang_exit_code = -1;
        job->gang_signal = 0;
        snprintf(job->gang_reason, sizeof job->gang_reason, "node lost");
    }
    struct action kept = {.type = ACTION_PART_EXITED,
                          .job_id = job->id,
                          .attempt = job->attempt,
                          .node_id = node_id,
                          .exit_code = -1};
    action_list_push(out, &kept);
    /* their agents hear of it now, not at their next heartbeat */
    for (int k = -1; k < job->nparts; k++) {
        int64_t other = k < 0 ? job->node_id : job->parts[k].node_id;
        if (other == node_id || job_part_exited(job, other))
            continue;
        struct action stop = {.type = ACTION_SEND_STOP,
                              .job_id = job->id,
                              .attempt = job->attempt,
                              .node_id = other,
                              .state = job->state,
                              .exit_code = -1};
        snprintf(stop.reason, sizeof stop.reason, "gang member's node lost");
        action_list_push(out, &stop);
    }
    return true;
}

/* Ends the attempt of job, which had a task on node_id, that node lost. */
static void lose_job_on_node(struct cluster *c, struct job *job, int64_t node_id, int64_t now_ms,
                             struct action_list *out)
{
    if (!lose_gang_part(job, node_id, out))
        sched_fail_attempt(c, job, JOB_LOST, JOB_FAILED, "node lost", -1, 0, now_ms, out);
}

/* Fails the attempt of every job on node_id, looking at all jobs. */
static void fail_jobs_on_node_scan(struct cluster *c, int64_t node_id, int64_t now_ms,
                                   struct action_list *out)
{
    for (size_t j = 0; j < c->njobs;) {
        struct job *job = &c->jobs[j];
        if (!job_on_node(job, node_id) || !job_state_is_on_node(job->state) ||
            job_part_exited(job, node_id)) {
            j++;
            continue;
        }
        /* Requeued (now off this node), removed or waiting for its other
         * tasks (its part here ended): look at index j again. */
        lose_job_on_node(c, job, node_id, now_ms, out);
    }
}

int sched_check_nodes(struct scheduler *s, struct cluster *c, int64_t now_ms,
                      struct action_list *out)
{
    int lost = 0;
    int64_t stalled_ms = s->last_node_check_ms ? now_ms - s->last_node_check_ms : 0;
    s->last_node_check_ms = now_ms;
    /* now is the wall clock's. A check far behind the last reads as a
     * stall: every node's silence moves on by it. A clock stepped back
     * leaves heartbeats heard "later" than now, which would keep a dead
     * node alive for the step's length: they are heard now instead. */
    if (stalled_ms > s->cfg.node_timeout_ms / 2 || stalled_ms < 0)
        for (size_t n = 0; n < c->nnodes; n++) {
            int64_t *heard = &c->nodes[n].last_heartbeat_ms;
            int64_t moved = stalled_ms > 0 ? *heard + stalled_ms : *heard;
            *heard = moved < now_ms ? moved : now_ms;
        }
    for (size_t n = 0; n < c->nnodes; n++) {
        struct node *node = &c->nodes[n];
        /* A draining or stopping node still runs tasks: it can be lost too. */
        if (!node_state_is_up(node->state) ||
            now_ms - node->last_heartbeat_ms <= s->cfg.node_timeout_ms)
            continue;
        bool stopped = node->state == NODE_STOPPING;
        node->state = NODE_LOST;
        lost++;
        struct action a = {.type = ACTION_NODE_LOST, .node_id = node->id, .exit_code = -1};
        snprintf(a.reason, sizeof a.reason, "%sno heartbeat for %lld s",
                 stopped ? "its agent stopped: " : "",
                 (long long)((now_ms - node->last_heartbeat_ms) / 1000));
        action_list_push(out, &a);
        int64_t node_id = node->id;
        /* Its jobs by the cluster's index, each requeued (now off this
         * node) or removed in turn. */
        struct cluster_node_ids its;
        if (cluster_node_ids_fill(c, node_id, &its) != 0) {
            fail_jobs_on_node_scan(c, node_id, now_ms, out); /* every job, as before the index */
            continue;
        }
        for (size_t k = 0; k < its.n; k++) {
            struct job *job = cluster_find_job(c, its.ids[k]);
            if (job && job_on_node(job, node_id) && job_state_is_on_node(job->state) &&
                !job_part_exited(job, node_id))
                lose_job_on_node(c, job, node_id, now_ms, out);
        }
        cluster_node_ids_release(&its);
    }
    return lost;
}

int sched_cancel(struct cluster *c, int64_t job_id, struct action_list *out)
{
    struct job *job = cluster_find_job(c, job_id);
    if (!job)
        return TIDE_ENOENT;
    if (job->state == JOB_PENDING || job->state == JOB_LOST) {
        struct action a = {.type = ACTION_FINISH, .job_id = job_id, .attempt = job->attempt,
                           .state = JOB_CANCELLED, .exit_code = -1};
        snprintf(a.reason, sizeof a.reason, "cancelled by user");
        action_list_push(out, &a);
        cluster_remove_job(c, job_id);
        return 1;
    }
    job->cancel_requested = true;
    return 0;
}
