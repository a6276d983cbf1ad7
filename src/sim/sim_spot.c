/*
 * What the cloud does to elastic pools in the simulator: spot
 * interruptions and failed create calls, drawn from the run's seed.
 *
 * Interruptions take the server's path (core/spot.h): spot_interrupt
 * drains the node and asks its jobs to checkpoint (ACTION_PREEMPT); at the
 * deadline, interruption_grace_s later, spot_check requeues the jobs still
 * there and the autoscaler releases the empty node and creates replacements.
 * A simulated task checkpoints the state it had at the interruption and
 * uses the whole grace to do so: its progress ends at the interruption,
 * its GPUs are held (and billed) until the deadline, and it restarts with
 * the rest of its run plus preempt_overhead. A ready (or draining) spot
 * node is reclaimed after an exponential time of mean 1 /
 * interruptions_per_node_hour hours from becoming ready, or at a listed
 * time.
 *
 * A failed create call (provider_failure_rate, provider_failed_calls)
 * makes no node; the pool's creations are held back as the server's pool
 * loop holds them (pool_backoff_ms of the failures in a row, through the
 * autoscaler's create_not_before_ms), and the next decision asks again.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/spot.h"
#include "sim/sim_rand.h"
#include "sim/sim_state.h"

/* Independent streams per pool and purpose, so turning on failures does
 * not move the interruptions. */
static uint64_t stream(uint64_t seed, int pool, int purpose)
{
    uint64_t s = seed ^ (0xD1B54A32D192ED03ULL * (uint64_t)(2 * pool + purpose + 1));
    sim_splitmix64(&s);
    return s;
}

static bool is_spot(const struct sim_state *st, int p)
{
    return st->el->pools[p].billing == BILLING_SPOT;
}

int sim_spot_init(struct sim_state *st)
{
    const struct sim_config *cfg = st->cfg;
    for (int p = 0; p < cfg->npools; p++) {
        st->rng_interrupt[p] = stream(cfg->seed, p, 0);
        st->rng_fail[p] = stream(cfg->seed, p, 1);
        const struct sim_pool *sp = &cfg->pools[p];
        if (!sp->elastic || !is_spot(st, p))
            continue;
        for (int j = 0; j < sp->ninterruptions; j++) {
            struct sim_event ev = {.t_ms = sp->interruptions[j].at_ms,
                                   .kind = SIM_EV_INTERRUPT,
                                   .job = (uint32_t)p,
                                   .gen = (uint32_t)j + 1};
            if (sim_heap_push(&st->heap, ev) != 0)
                return TIDE_ENOMEM;
        }
    }
    for (size_t k = 0; k < st->nnodes; k++) /* min_nodes, ready at 0 */
        if (st->c.nodes[k].state == NODE_READY && sim_spot_node_ready(st, k, 0))
            return TIDE_ENOMEM;
    return 0;
}

int sim_spot_node_ready(struct sim_state *st, size_t k, int64_t t)
{
    int p = st->node_pool[k];
    double rate = st->cfg->pools[p].interruptions_per_node_hour;
    if (!st->cfg->pools[p].elastic || !is_spot(st, p) || !(rate > 0))
        return 0;
    double ms = -log(sim_unit(&st->rng_interrupt[p])) / rate * 3600000.0;
    if (!(ms < 1e15))
        return 0; /* never, in any trace */
    struct sim_event ev = {
        .t_ms = sim_time_after(t, (int64_t)ms + 1), .kind = SIM_EV_INTERRUPT, .job = (uint32_t)k};
    return sim_heap_push(&st->heap, ev) != 0 ? TIDE_ENOMEM : 0;
}

/* The node an interruption event means, or -1: a drawn one names its node,
 * a listed one its pool's node_index-th node by name. */
static long event_node(const struct sim_state *st, const struct sim_event *ev, int *listed_pool)
{
    *listed_pool = -1;
    if (ev->gen == 0)
        return (long)ev->job;
    int p = (int)ev->job;
    *listed_pool = p;
    const struct sim_interruption *li = &st->cfg->pools[p].interruptions[ev->gen - 1];
    char name[TIDE_NAME_MAX];
    snprintf(name, sizeof name, "%.40s-%d", st->el->pools[p].name, li->node_index);
    for (size_t k = 0; k < st->nnodes; k++)
        if (st->node_pool[k] == p && !strcmp(st->c.nodes[k].name, name))
            return (long)k;
    return -1;
}

int sim_spot_interrupt(struct sim_state *st, const struct sim_event *ev, int64_t t)
{
    int listed;
    long k = event_node(st, ev, &listed);
    struct node *n = k >= 0 ? &st->c.nodes[k] : NULL;
    if (!n || (n->state != NODE_READY && n->state != NODE_DRAINING) || n->interrupt_deadline_ms) {
        if (listed >= 0)
            st->el->stats[listed].interruptions_missed++;
        return 0; /* not there (yet, or any more), or reclaimed already */
    }
    int p = st->node_pool[k];
    struct sim_pool_stats *ps = &st->el->stats[p];
    action_list_clear(&st->spot_actions);
    int asked = spot_interrupt(&st->c, n, t, st->el->pools[p].interruption_grace_s * 1000,
                               listed >= 0 ? "listed in the sim config" : "drawn from the seed",
                               &st->spot_actions);
    if (asked == TIDE_EINVAL)
        return 0;
    if (asked < 0)
        return asked;
    sim_index_refresh(st, n); /* draining: no new work */
    for (size_t a = 0; a < st->spot_actions.len; a++) {
        const struct action *act = &st->spot_actions.items[a];
        if (act->type != ACTION_PREEMPT)
            continue;
        size_t i = (size_t)(act->job_id - 1);
        struct sim_run_job *r = &st->run[i];
        if (r->node < 0 || r->interrupted)
            continue;
        /* Progress ends here; the finish planned for it will not come. */
        r->remaining_ms -= t - r->run_start_ms;
        if (r->remaining_ms < 0)
            r->remaining_ms = 0;
        r->gen++;
        r->interrupted = true;
        r->interrupted_ms = t;
        ps->jobs_interrupted++;
    }
    ps->interruptions++;
    char why[TIDE_REASON_MAX];
    snprintf(why, sizeof why, "spot interruption (%s): %d job%s asked to checkpoint, gone in %llds",
             listed >= 0 ? "listed" : "drawn", asked, asked == 1 ? "" : "s",
             (long long)st->el->pools[p].interruption_grace_s);
    if (sim_log_scale(st, t, p, SIM_SCALE_INTERRUPTED, asked, n->id, why))
        return TIDE_ENOMEM;
    struct sim_event dl = {
        .t_ms = n->interrupt_deadline_ms, .kind = SIM_EV_SPOT, .job = (uint32_t)k};
    if (sim_heap_push(&st->heap, dl) != 0)
        return TIDE_ENOMEM;
    st->last_activity_ms = t;
    return 1;
}

int sim_spot_deadline(struct sim_state *st, int64_t t)
{
    /* The sim's side first, while the jobs still hold their GPUs: their
     * GPU-time up to now, their progress up to the interruption. */
    for (size_t k = 0; k < st->nnodes; k++) {
        struct node *n = &st->c.nodes[k];
        if (!n->interrupt_deadline_ms || t < n->interrupt_deadline_ms ||
            n->state == NODE_RELEASED || n->state == NODE_FAILED)
            continue;
        for (int g = 0; g < n->ngpus; g++) {
            int64_t id = n->gpus[g].job_id;
            if (!id || st->run[id - 1].node < 0 || !st->run[id - 1].interrupted)
                continue;
            sim_stop_running(st, cluster_find_job(&st->c, id), t);
        }
    }
    action_list_clear(&st->spot_actions);
    int requeued = spot_check(&st->c, t, &st->spot_actions);
    if (requeued < 0)
        return requeued;
    for (size_t a = 0; a < st->spot_actions.len; a++) {
        const struct action *act = &st->spot_actions.items[a];
        struct job *job =
            act->type == ACTION_REQUEUE ? cluster_find_job(&st->c, act->job_id) : NULL;
        if (!job || job->state != JOB_PENDING)
            continue;
        size_t i = (size_t)(job->id - 1);
        struct sim_run_job *r = &st->run[i];
        r->interrupted = false;
        r->delay_pending = true;
        r->delay_from_ms = r->interrupted_ms;
        st->el->interruption_delay_ms += st->cfg->preempt_overhead_ms;
        st->el->stats[st->node_pool[act->node_id - 1]].jobs_requeued++;
        st->res->jobs[i].interruptions++;
        sim_back_in_queue(st, job);
    }
    sim_telemetry_touched(st);
    return requeued;
}

bool sim_spot_create_fails(struct sim_state *st, int p, long call, int64_t t)
{
    const struct sim_pool *sp = &st->cfg->pools[p];
    bool fail = false;
    for (int j = 0; j < sp->nfailing_calls && !fail; j++)
        fail = sp->failing_calls[j] == call;
    if (!fail && sp->provider_failure_rate > 0)
        fail = sim_unit(&st->rng_fail[p]) <= sp->provider_failure_rate;
    if (!fail)
        return false;
    int fails = ++st->create_failures[p];
    int64_t wait = pool_backoff_ms(fails);
    st->as.state[p].create_not_before_ms = sim_time_after(t, wait);
    st->el->stats[p].provider_failures++;
    st->el->stats[p].backoff_ms += wait;
    return true;
}

void sim_spot_create_ok(struct sim_state *st, int p)
{
    st->create_failures[p] = 0;
}
