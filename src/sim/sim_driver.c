/*
 * The simulator's driver: builds a cluster from the config's pools, feeds
 * trace arrivals and finish events to the real core in time order, runs one
 * sched_pass per batch of same-time events and applies its starts. Running
 * jobs stay in the cluster (backfill needs them); a finished one leaves
 * through cluster_remove_job. With preemption on, a waiting job that the
 * order policy puts strictly ahead of running ones (LAS: a lower service
 * band) requeues them, as ACTION_REQUEUE would, keeping their progress.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/order.h"
#include "core/placement.h"
#include "core/placement_index.h"
#include "core/sched.h"
#include "core/spot.h"
#include "sim/sim.h"
#include "sim/sim_heap.h"
#include "sim/sim_state.h"

/* Without an event, look again at most this long after the last change
 * (delays, windows and cooldowns are shorter). */

/* --- projects: name -> index, in order of first appearance --- */

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int index_projects(struct sim_state *st)
{
    const struct trace *t = st->trace;
    size_t cap = 64;
    while (cap < 2 * t->njobs + 2)
        cap *= 2;
    int32_t *table = malloc(cap * sizeof *table);
    st->res->projects = calloc(t->njobs ? t->njobs : 1, sizeof *st->res->projects);
    if (!table || !st->res->projects) {
        free(table);
        return TIDE_ENOMEM;
    }
    memset(table, 0xff, cap * sizeof *table);
    for (size_t i = 0; i < t->njobs; i++) {
        const char *name = t->jobs[i].project;
        size_t h = hash_name(name) & (cap - 1);
        while (table[h] >= 0 && strcmp(st->res->projects[table[h]].name, name))
            h = (h + 1) & (cap - 1);
        if (table[h] < 0) {
            table[h] = (int32_t)st->res->nprojects;
            snprintf(st->res->projects[st->res->nprojects].name, TRACE_NAME_MAX, "%s", name);
            st->res->nprojects++;
        }
        st->res->jobs[i].project = table[h];
        st->res->projects[table[h]].jobs++;
    }
    free(table);
    return 0;
}

/* --- cluster from pools --- */

static int grow_nodes(struct sim_state *st, size_t need)
{
    if (need <= st->nodes_cap)
        return 0;
    size_t cap = st->nodes_cap ? st->nodes_cap : 64;
    while (cap < need)
        cap *= 2;
    int *u = realloc(st->node_used, cap * sizeof *u);
    if (u)
        st->node_used = u;
    int *c = realloc(st->node_cap, cap * sizeof *c);
    if (c)
        st->node_cap = c;
    int *p = realloc(st->node_pool, cap * sizeof *p);
    if (p)
        st->node_pool = p;
    if (!u || !c || !p)
        return TIDE_ENOMEM;
    st->nodes_cap = cap;
    return 0;
}

/* Elastic runs: one more node of pool p (the core's pool), in state. Its
 * id is its position + 1, as in fixed-size runs. */
static int add_pool_node(struct sim_state *st, int p, enum node_state state, int64_t t)
{
    const struct pool *pool = &st->el->pools[p];
    size_t k = st->nnodes;
    if (grow_nodes(st, k + 1))
        return TIDE_ENOMEM;
    struct node n;
    memset(&n, 0, sizeof n);
    n.id = (int64_t)k + 1;
    snprintf(n.name, sizeof n.name, "%.40s-%d", pool->name, st->node_seq[p]++);
    n.state = state;
    n.cpus = st->cfg->pools[p].cpus;
    n.memory_mib = st->cfg->pools[p].memory_mib;
    snprintf(n.driver, sizeof n.driver, "sim");
    snprintf(n.pool, sizeof n.pool, "%s", pool->name);
    n.created_ms = n.last_heartbeat_ms = t;
    n.ready_ms = state == NODE_READY ? t : 0;
    n.spot = pool->billing == BILLING_SPOT;
    n.ngpus = pool->gpus_per_node;
    for (int g = 0; g < n.ngpus; g++) {
        n.gpus[g].index = g;
        snprintf(n.gpus[g].name, sizeof n.gpus[g].name, "%s", pool->gpu_model);
        n.gpus[g].memory_total_mib = pool->gpu_memory_mib;
        snprintf(n.gpus[g].uuid, sizeof n.gpus[g].uuid, "GPU-sim-%zu-%d", k, g);
    }
    if (!cluster_put_node(&st->c, &n))
        return TIDE_ENOMEM;
    st->nnodes = k + 1;
    st->node_used[k] = 0;
    st->node_cap[k] = n.ngpus;
    st->node_pool[k] = p;
    st->alive_by_pool[p]++;
    st->gpus_alive_by_pool[p] += n.ngpus;
    st->gpus_alive += n.ngpus;
    struct sim_pool_stats *ps = &st->el->stats[p];
    if (st->alive_by_pool[p] > ps->peak_nodes)
        ps->peak_nodes = st->alive_by_pool[p];
    if (st->gpus_alive > st->res->gpus_provisioned)
        st->res->gpus_provisioned = st->gpus_alive;
    return 0;
}

/* Fixed pools and the elastic pools' min_nodes, ready at 0. */
static int build_elastic_cluster(struct sim_state *st)
{
    struct sim_elastic *el = st->el;
    el->npools = st->cfg->npools;
    for (int p = 0; p < el->npools; p++) {
        sim_pool_core(st->cfg, p, &el->pools[p]);
        struct gpu g;
        memset(&g, 0, sizeof g);
        snprintf(g.name, sizeof g.name, "%s", el->pools[p].gpu_model);
        g.memory_total_mib = el->pools[p].gpu_memory_mib;
        st->pool_gpu[p] = g;
    }
    for (int p = 0; p < el->npools; p++)
        for (int k = 0; k < el->pools[p].min_nodes; k++) {
            int rc = add_pool_node(st, p, NODE_READY, 0);
            if (rc)
                return rc;
        }
    for (int p = 0; p < el->npools; p++)
        st->res->gpus_provisioned_by_pool[p] = el->pools[p].max_nodes * el->pools[p].gpus_per_node;
    autoscaler_init(&st->as, el->pools, el->npools);
    billing_init(&el->billing);
    return 0;
}

static int build_cluster(struct sim_state *st)
{
    const struct sim_config *cfg = st->cfg;
    size_t total = 0;
    for (int p = 0; p < cfg->npools; p++)
        total += (size_t)cfg->pools[p].nodes;
    st->nnodes = total;
    st->node_used = calloc(total, sizeof(int));
    st->node_cap = calloc(total, sizeof(int));
    st->node_pool = calloc(total, sizeof(int));
    struct node *proto = calloc(1, sizeof *proto);
    if (!st->node_used || !st->node_cap || !st->node_pool || !proto) {
        free(proto);
        return TIDE_ENOMEM;
    }
    /* Reserve once: cluster_put_node looks for an existing id first, which
     * is linear, so build the array directly at its final size. */
    st->c.nodes = malloc(total * sizeof *st->c.nodes);
    if (!st->c.nodes) {
        free(proto);
        return TIDE_ENOMEM;
    }
    st->c.nodes_cap = total;
    size_t k = 0;
    for (int p = 0; p < cfg->npools; p++) {
        const struct sim_pool *pool = &cfg->pools[p];
        memset(proto, 0, sizeof *proto);
        sim_pool_core(cfg, p, &st->fixed_pools[p]); /* what budgets price its GPUs at */
        snprintf(proto->pool, sizeof proto->pool, "%s", pool->name);
        proto->state = NODE_READY;
        proto->cpus = pool->cpus;
        proto->memory_mib = pool->memory_mib;
        snprintf(proto->driver, sizeof proto->driver, "sim");
        proto->ngpus = pool->gpus_per_node;
        for (int g = 0; g < pool->gpus_per_node; g++) {
            proto->gpus[g].index = g;
            snprintf(proto->gpus[g].name, sizeof proto->gpus[g].name, "%s", pool->gpu_model);
            proto->gpus[g].memory_total_mib = pool->gpu_memory_mib;
        }
        st->pool_gpu[p] = proto->gpus[0];
        for (int n = 0; n < pool->nodes; n++, k++) {
            struct node *node = &st->c.nodes[k];
            *node = *proto;
            node->id = (int64_t)k + 1;
            snprintf(node->name, sizeof node->name, "%.40s-%d", pool->name, n);
            for (int g = 0; g < pool->gpus_per_node; g++)
                snprintf(node->gpus[g].uuid, sizeof node->gpus[g].uuid, "GPU-sim-%zu-%d", k, g);
            st->node_cap[k] = pool->gpus_per_node;
            st->node_pool[k] = p;
            st->res->gpus_provisioned_by_pool[p] += pool->gpus_per_node;
            st->res->gpus_provisioned += pool->gpus_per_node;
        }
    }
    st->c.nnodes = total;
    st->nodes_cap = total;
    st->gpus_alive = st->res->gpus_provisioned;
    free(proto);
    return 0;
}

/* Nodes a pool can ever have: its size, or for an elastic pool max_nodes. */
static int pool_nodes_ever(const struct sim_pool *pool)
{
    return pool->elastic ? pool->core.max_nodes : pool->nodes;
}

/* Could any node ever hold this job? Decided per pool, at arrival, so a
 * job that is too big is rejected with its reason instead of waiting forever. */
static bool fits_ever(const struct sim_state *st, const struct job *job)
{
    for (int p = 0; p < st->cfg->npools; p++) {
        const struct sim_pool *pool = &st->cfg->pools[p];
        if (pool_nodes_ever(pool) == 0 || pool->gpus_per_node < job->gpus)
            continue;
        if (job->gpus > 0 && !placement_gpu_matches(&st->pool_gpu[p], job))
            continue;
        return true;
    }
    return false;
}

/* For a job bigger than every node: the fewest nodes m (m >= gpus over the
 * biggest matching node, dividing gpus, at most TIDE_MAX_GANG_NODES) that
 * the matching pools could hold it on as a gang in equal shares; 0 when
 * none. */
static int gang_nodes_for(const struct sim_state *st, const struct job *job)
{
    int biggest = 0;
    long nodes = 0;
    for (int p = 0; p < st->cfg->npools; p++) {
        const struct sim_pool *pool = &st->cfg->pools[p];
        if (pool_nodes_ever(pool) == 0 || !placement_gpu_matches(&st->pool_gpu[p], job))
            continue;
        nodes += pool_nodes_ever(pool);
        if (pool->gpus_per_node > biggest)
            biggest = pool->gpus_per_node;
    }
    if (biggest <= 0)
        return 0;
    for (int m = (job->gpus + biggest - 1) / biggest; m <= TIDE_MAX_GANG_NODES && m <= nodes; m++) {
        if (m < 2 || job->gpus % m)
            continue;
        /* Enough nodes of at least gpus/m GPUs for m distinct shares. */
        long big_enough = 0;
        for (int p = 0; p < st->cfg->npools; p++) {
            const struct sim_pool *pool = &st->cfg->pools[p];
            if (pool->gpus_per_node >= job->gpus / m &&
                placement_gpu_matches(&st->pool_gpu[p], job))
                big_enough += pool_nodes_ever(pool);
        }
        if (big_enough >= m)
            return m;
    }
    return 0;
}

void sim_waiting_list_add(struct sim_state *st, size_t i)
{
    st->waiting_pos[i] = (int32_t)st->nwaiting;
    st->waiting[st->nwaiting++] = (int64_t)i + 1;
    if (st->queue.on)
        sim_queue_add(&st->queue, cluster_find_job(&st->c, (int64_t)i + 1));
    if (st->as.demand && demand_add(&st->demand, cluster_find_job(&st->c, (int64_t)i + 1)) != 0)
        st->as.demand = NULL; /* out of memory: the autoscaler scans from now on */
}

void sim_waiting_list_remove(struct sim_state *st, size_t i)
{
    int32_t pos = st->waiting_pos[i];
    if (pos < 0)
        return;
    sim_queue_remove(&st->queue, (int64_t)i + 1);
    const struct job *job = st->as.demand ? cluster_find_job(&st->c, (int64_t)i + 1) : NULL;
    if (job)
        demand_remove(&st->demand, job);
    int64_t last = st->waiting[--st->nwaiting];
    st->waiting[pos] = last;
    st->waiting_pos[last - 1] = pos;
    st->waiting_pos[i] = -1;
}

/* A job begins to wait: in the list the passes look at, unless its
 * project is at a hard cap (then the budget keeps it aside). */
void sim_waiting_add(struct sim_state *st, size_t i)
{
    if (!st->bud || !sim_budget_waiting(st, i, 1))
        sim_waiting_list_add(st, i);
}

static void waiting_drop(struct sim_state *st, size_t i)
{
    if (st->bud)
        sim_budget_waiting(st, i, -1);
    sim_waiting_list_remove(st, i);
}

static int free_partial_of(int used, int cap)
{
    return used > 0 && used < cap ? cap - used : 0;
}

static void node_change(struct sim_state *st, int node, int delta)
{
    int u = st->node_used[node], cap = st->node_cap[node];
    st->free_partial += free_partial_of(u + delta, cap) - free_partial_of(u, cap);
    st->node_used[node] = u + delta;
    st->used_total += delta;
}

/* Elastic runs: the sim's GPU telemetry, read by the autoscaler's
 * scale_down_utilization: a GPU a job holds is as busy as the trace says
 * the job was (100 % when it does not say), a free one idle. */
static void node_telemetry(struct sim_state *st, int node)
{
    if (!st->el)
        return;
    struct node *n = &st->c.nodes[node];
    for (int g = 0; g < n->ngpus; g++) {
        int64_t id = n->gpus[g].job_id;
        const struct trace_job *tj = id ? &st->trace->jobs[id - 1] : NULL;
        n->gpus[g].utilization_pct = !tj ? 0 : tj->has_util ? (tj->util_bp + 50) / 100 : 100;
    }
    sim_index_refresh(st, n); /* loadaware's index ranks free GPUs by load */
}

void sim_telemetry_touched(struct sim_state *st)
{
    for (int k = 0; k < st->ntouched; k++)
        node_telemetry(st, st->touched[k]);
    st->ntouched = 0;
}

/* Ends the current run of job (trace job id - 1) at t: accounts its GPU
 * time on each of its nodes (a gang has parts on several). A job a spot
 * interruption asked to checkpoint held its GPUs until t but ran (and was
 * busy) only until the interruption. */
int64_t sim_stop_running(struct sim_state *st, const struct job *job, int64_t t)
{
    size_t i = (size_t)(job->id - 1);
    struct sim_run_job *r = &st->run[i];
    struct sim_job_result *jr = &st->res->jobs[i];
    const struct trace_job *tj = &st->trace->jobs[i];
    int64_t dt = t - r->run_start_ms;
    int64_t ran = r->interrupted ? r->interrupted_ms - r->run_start_ms : dt;
    if (st->bud) /* the budget's charge so far, at the GPUs held until now */
        sim_budget_meter_job(st, i, t);
    for (int k = -1; k < job->nparts; k++) {
        int node = (int)((k < 0 ? job->node_id : job->parts[k].node_id) - 1);
        int gpus = k < 0 ? job->ngpus_assigned : job->parts[k].ngpus;
        int pool = st->node_pool[node];
        int64_t gpu_ms = dt * gpus;
        st->res->projects[jr->project].gpu_ms_by_pool[pool] += gpu_ms;
        st->res->gpu_ms_allocated_by_pool[pool] += gpu_ms;
        st->res->gpu_ms_allocated += gpu_ms;
        if (tj->has_util) {
            st->res->util_known_gpu_ms += gpu_ms;
            st->res->gpu_ms_busy += ran * gpus * tj->util_bp / 10000;
        }
        if (r->interrupted && st->el)
            st->el->stats[pool].grace_gpu_ms += (dt - ran) * gpus;
        if (st->bud)
            sim_budget_gpus(st, i, pool, gpus, -1);
        node_change(st, node, -gpus);
        if (st->ntouched <= TIDE_MAX_GANG_NODES)
            st->touched[st->ntouched++] = node;
    }
    jr->run_ms += ran;
    r->node = -1;
    st->nrunning--;
    return dt;
}

static void integrate(struct sim_state *st, int64_t t)
{
    int64_t dt = t - st->last_t;
    if (dt <= 0)
        return;
    st->res->free_gpu_ms += (int64_t)(st->gpus_alive - st->used_total) * dt;
    if (st->el) {
        st->el->gpu_ms_provisioned += (int64_t)st->gpus_alive * dt;
        for (int p = 0; p < st->el->npools; p++)
            st->el->gpu_ms_provisioned_by_pool[p] += (int64_t)st->gpus_alive_by_pool[p] * dt;
    }
    st->res->free_partial_gpu_ms += (int64_t)st->free_partial * dt;
    if (st->bud)
        sim_budget_integrate(st, dt);
    st->last_t = t;
}

/* Applies the starts of the last pass (its ACTION_STARTs). */
static int apply_starts(struct sim_state *st, int64_t t)
{
    for (size_t k = 0; k < st->actions.len; k++) {
        const struct action *a = &st->actions.items[k];
        struct job *job = a->type == ACTION_START ? cluster_find_job(&st->c, a->job_id) : NULL;
        if (!job || job->state != JOB_STARTING)
            continue;
        job->state = JOB_RUNNING; /* the sim provider starts tasks at once */
        size_t i = (size_t)(job->id - 1);
        struct sim_run_job *r = &st->run[i];
        struct sim_job_result *jr = &st->res->jobs[i];
        if (jr->first_start_ms < 0) {
            jr->first_start_ms = t;
            jr->first_node = (int32_t)job->node_id;
        }
        r->run_start_ms = t;
        r->node = (int32_t)(job->node_id - 1);
        if (r->delay_pending) { /* restarted after a spot interruption */
            st->el->interruption_delay_ms += t - r->delay_from_ms;
            r->delay_pending = false;
        }
        for (int k = -1; k < job->nparts; k++) {
            int node = (int)((k < 0 ? job->node_id : job->parts[k].node_id) - 1);
            int gpus = k < 0 ? job->ngpus_assigned : job->parts[k].ngpus;
            node_change(st, node, gpus);
            node_telemetry(st, node);
            if (st->bud)
                sim_budget_gpus(st, i, st->node_pool[node], gpus, 1);
        }
        waiting_drop(st, i);
        st->npending--;
        st->nrunning++;
        st->res->starts++;
        struct sim_event ev = {.t_ms = sim_time_after(t, r->remaining_ms),
                               .kind = SIM_EV_FINISH,
                               .job = (uint32_t)i,
                               .gen = r->gen};
        if (sim_heap_push(&st->heap, ev) != 0)
            return TIDE_ENOMEM;
    }
    return 0;
}

static int run_pass(struct sim_state *st, int64_t t)
{
    if (st->bud)
        sim_budget_meter_starts(st, t);
    action_list_clear(&st->actions);
    const int64_t *ids = st->waiting;
    size_t nids = st->nwaiting;
    int free_gpus = placement_index_free_gpus(&st->c);
    if (st->queue.on && !st->s.cfg.explain && free_gpus >= 0) {
        /* Deep queues: only the jobs of each shape that the free GPUs
         * could hold, which places the same (sim_queue.h). */
        const int64_t *some;
        size_t n = sim_queue_candidates(&st->queue, free_gpus, &some);
        if (n != (size_t)-1)
            ids = some, nids = n;
    }
    int placed = sched_pass_ids(&st->s, &st->c, ids, nids, t, &st->actions);
    st->res->passes++;
    if (placed < 0)
        return placed;
    return placed ? apply_starts(st, t) : 0;
}

/* --- preemption --- */

/* A stand-in for running job R as the policy would see it now: its service
 * includes the current run and its estimate is what is left of it now
 * (SRTF: a job near its end is not preempted for a longer one); with
 * earliest set it also sorts before every job of its class, so "W goes
 * before it" means W outranks it outright rather than by FIFO tie-break. */
static void as_seen_now(const struct sim_state *st, struct job *out, const struct job *r,
                        int64_t t, bool earliest)
{
    size_t i = (size_t)(r->id - 1);
    out->id = r->id;
    out->submit_ms = earliest ? INT64_MIN : r->submit_ms;
    out->priority = r->priority;
    out->effective_priority = r->effective_priority;
    out->gpus = r->gpus;
    out->est_runtime_s = r->est_runtime_s;
    if (r->est_runtime_s > 0) { /* 0 is unknown: it stays so */
        int64_t left_ms = r->est_runtime_s * 1000 - (t - st->run[i].run_start_ms);
        out->est_runtime_s = left_ms > 1000 ? (left_ms + 999) / 1000 : 1;
    }
    out->attained_gpu_ms = r->attained_gpu_ms + (t - st->run[i].run_start_ms) * r->gpus;
}

struct victim {
    struct job *job;
    struct job seen; /* as_seen_now, real submit time */
    int here;        /* its GPUs on the node looked at (a gang has others elsewhere) */
};

static int gpus_on(const struct job *job, int64_t node_id)
{
    int idx[TIDE_MAX_GPUS_PER_NODE];
    return job_gpus_on_node(job, node_id, idx);
}

static int victim_last_first(const void *a, const void *b, void *ops)
{
    const struct order_ops *order = ops;
    const struct victim *x = a, *y = b;
    return order->compare(&y->seen, &x->seen);
}

void sim_back_in_queue(struct sim_state *st, struct job *job)
{
    size_t i = (size_t)(job->id - 1);
    struct sim_run_job *r = &st->run[i];
    r->remaining_ms += st->cfg->preempt_overhead_ms;
    if (st->cfg->oracle_runtime)
        job->est_runtime_s = (r->remaining_ms + 999) / 1000;
    sim_waiting_add(st, i);
    st->npending++;
}

/* The pool of the spot node whose interruption job is checkpointing for
 * (a gang's part may be on it, its first node elsewhere); -1: none. */
static int interrupted_pool(const struct sim_state *st, const struct job *job)
{
    for (int k = -1; k < job->nparts; k++) {
        int64_t id = k < 0 ? job->node_id : job->parts[k].node_id;
        if (id > 0 && st->c.nodes[id - 1].interrupt_deadline_ms)
            return st->node_pool[id - 1];
    }
    return -1;
}

static void requeue(struct sim_state *st, struct job *job, int64_t t)
{
    size_t i = (size_t)(job->id - 1);
    struct sim_run_job *r = &st->run[i];
    /* A job a spot interruption asked to checkpoint made its last progress
     * then, and had it taken off what it owes then: a preemption in its
     * grace ends the interruption's requeue early, not a second run. */
    bool interrupted = r->interrupted;
    int pool = interrupted ? interrupted_pool(st, job) : -1;
    int64_t ran = interrupted ? r->interrupted_ms - r->run_start_ms : t - r->run_start_ms;
    sim_stop_running(st, job, t);
    if (!interrupted)
        r->remaining_ms -= ran;
    if (r->remaining_ms < 0)
        r->remaining_ms = 0;
    r->gen++;
    if (interrupted) {
        r->interrupted = false;
        r->delay_pending = true;
        r->delay_from_ms = r->interrupted_ms;
        if (st->el && pool >= 0)
            st->el->stats[pool].jobs_requeued++;
        st->res->jobs[i].interruptions++;
    }
    job->attained_gpu_ms += ran * job->gpus;
    cluster_unassign(&st->c, job);
    sim_telemetry_touched(st);
    job->state = JOB_PENDING; /* running -> preempted -> pending */
    job->start_ms = 0;
    sim_back_in_queue(st, job);
    st->res->preemptions++;
    st->res->jobs[i].preemptions++;
}

#define PREEMPT_LOOKS 4

static bool could_ever_fit(const struct job *job, void *ctx)
{
    return fits_ever(ctx, job);
}

/* The preemptible jobs on node that w outranks as they stand at t, each
 * once, into vic (with the GPUs each holds there); earliest is scratch.
 * Returns how many. */
static int node_victims(struct sim_state *st, const struct node *node, const struct job *w,
                        int64_t t, struct victim *vic, struct job *earliest)
{
    const struct order_ops *order = st->s.cfg.order;
    int nv = 0;
    for (int g = 0; g < node->ngpus; g++) {
        int64_t id = node->gpus[g].job_id;
        if (!id)
            continue;
        bool dup = false;
        for (int v = 0; v < nv && !dup; v++)
            dup = vic[v].job->id == id;
        if (dup)
            continue;
        struct job *r = cluster_find_job(&st->c, id);
        if (!r->preemptible)
            continue;
        as_seen_now(st, earliest, r, t, true);
        if (order->compare(w, earliest) >= 0)
            continue;
        vic[nv].job = r;
        as_seen_now(st, &vic[nv].seen, r, t, false);
        vic[nv].here = gpus_on(r, node->id);
        nv++;
    }
    return nv;
}

/* Requeues, for the first of the waiting jobs cands[0..np) (best first)
 * that outranks running jobs holding enough GPUs on one node, the fewest
 * of them (last in policy order first). Returns 1 when it preempted, else 0. */
static int preempt_for(struct sim_state *st, int64_t t, struct victim *vic, struct job **cands,
                       size_t np)
{
    const struct order_ops *order = st->s.cfg.order;
    struct job earliest;
    memset(&earliest, 0, sizeof earliest);
    for (size_t k = 0; k < np; k++) {
        struct job *w = cands[k];
        int64_t best_node = -1;
        int best_cost = INT_MAX;
        for (size_t n = 0; n < st->nnodes; n++) {
            int cap = st->node_cap[n], free = cap - st->node_used[n];
            if (cap < w->gpus || free >= w->gpus || st->c.nodes[n].state != NODE_READY)
                continue;
            struct node *node = &st->c.nodes[n];
            if (w->gpus > 0 && !placement_gpu_matches(&node->gpus[0], w))
                continue;
            int nv = node_victims(st, node, w, t, vic, &earliest), victim_gpus = 0;
            for (int v = 0; v < nv; v++)
                victim_gpus += vic[v].here;
            if (free + victim_gpus < w->gpus)
                continue;
            qsort_r(vic, (size_t)nv, sizeof *vic, victim_last_first, (void *)order);
            int freed = free, cost = 0;
            for (int v = 0; v < nv && freed < w->gpus; v++)
                freed += vic[v].here, cost += vic[v].job->gpus;
            if (cost < best_cost) {
                best_cost = cost;
                best_node = (int64_t)n;
            }
        }
        if (best_node < 0)
            continue;
        /* Redo the chosen node's list and requeue from the back. */
        struct node *node = &st->c.nodes[best_node];
        int nv = node_victims(st, node, w, t, vic, &earliest);
        int free = st->node_cap[best_node] - st->node_used[best_node];
        qsort_r(vic, (size_t)nv, sizeof *vic, victim_last_first, (void *)order);
        for (int v = 0; v < nv && free < w->gpus; v++) {
            free += vic[v].here;
            requeue(st, vic[v].job, t);
        }
        return 1;
    }
    return 0;
}


/* Finds one waiting job that outranks running jobs holding enough GPUs on
 * one node, and requeues the fewest of them (last in policy order first).
 * Returns 1 when it preempted, 0 when nothing to do, or TIDE_ENOMEM. */
static int preempt_once(struct sim_state *st, int64_t t, struct victim *vic)
{
    const struct order_ops *order = st->s.cfg.order;
    size_t np = 0;
    if (st->queue.on) { /* the first few in policy order, shape by shape */
        np = sim_queue_first(&st->queue, PREEMPT_LOOKS, could_ever_fit, st, st->pend_top);
        return preempt_for(st, t, vic, st->pend_top, np);
    }
    if (st->pend_cap < st->c.njobs) {
        struct job **grown = realloc(st->pend, st->c.njobs * sizeof *grown);
        if (!grown)
            return TIDE_ENOMEM;
        st->pend = grown;
        st->pend_cap = st->c.njobs;
    }
    for (size_t j = 0; j < st->c.njobs; j++) {
        struct job *job = &st->c.jobs[j];
        if (job->state == JOB_PENDING && fits_ever(st, job) &&
            !(st->bud && sim_budget_holds(st, (size_t)(job->id - 1))))
            st->pend[np++] = job; /* a held job could not take what it frees */
    }
    if (np == 0)
        return 0;
    /* Only the first PREEMPT_LOOKS in policy order are looked at: pick
     * them in one pass instead of sorting every waiting job (the order is
     * total, so they are the ones a sort would put first). */
    size_t top = 0;
    for (size_t j = 0; j < np; j++) {
        struct job *job = st->pend[j];
        if (top == PREEMPT_LOOKS && order->compare(job, st->pend[top - 1]) >= 0)
            continue;
        size_t at = top < PREEMPT_LOOKS ? top++ : top - 1;
        while (at > 0 && order->compare(job, st->pend[at - 1]) < 0) {
            st->pend[at] = st->pend[at - 1];
            at--;
        }
        st->pend[at] = job;
    }
    return preempt_for(st, t, vic, st->pend, top);
}

/* --- the loop --- */

static int push_sample(struct sim_state *st, int64_t t)
{
    struct sim_result *res = st->res;
    if (res->nsamples == res->samples_cap) {
        size_t next = res->samples_cap ? res->samples_cap * 2 : 4096;
        struct sim_sample *grown = realloc(res->samples, next * sizeof *grown);
        if (!grown)
            return TIDE_ENOMEM;
        res->samples = grown;
        res->samples_cap = next;
    }
    res->samples[res->nsamples++] = (struct sim_sample){
        .t_ms = t, .queued = (int32_t)st->npending, .gpus_used = st->used_total,
        .free_partial = st->free_partial, .running = (int32_t)st->nrunning,
        .gpus_provisioned = st->gpus_alive};
    if (st->el)
        for (int p = 0; p < st->el->npools; p++)
            res->samples[res->nsamples - 1].cost_micros +=
                billing_pool_cost_micros(&st->el->billing, st->el->pools, p);
    return 0;
}

static int admit(struct sim_state *st, size_t i, struct tide_err *err)
{
    const struct trace_job *tj = &st->trace->jobs[i];
    struct sim_job_result *jr = &st->res->jobs[i];
    struct job job;
    memset(&job, 0, sizeof job);
    job.id = (int64_t)i + 1;
    snprintf(job.project, sizeof job.project, "%s", tj->project);
    snprintf(job.queue, sizeof job.queue, "%s", tj->queue);
    job.priority = tj->priority;
    job.effective_priority = tj->priority; /* no queue escalates it in the sim */
    job.gpus = tj->gpus;
    job.gpu_memory_mib = tj->gpu_memory_mib;
    job.est_runtime_s = st->cfg->oracle_runtime ? (tj->duration_ms + 999) / 1000 : 0;
    job.preemptible = true;
    job.state = JOB_PENDING;
    job.submit_ms = tj->submit_ms;
    if (!fits_ever(st, &job))
        job.max_nodes = gang_nodes_for(st, &job); /* a gang over several nodes */
    if (!fits_ever(st, &job) && job.max_nodes < 2) {
        jr->outcome = SIM_REJECTED;
        jr->finish_ms = tj->submit_ms;
        if (st->res->rejected++ == 0)
            snprintf(st->res->first_reject_reason, sizeof st->res->first_reject_reason,
                     "trace line %ld: %d GPUs%s%s: no pool has a node that could hold it",
                     tj->line, tj->gpus, tj->gpu_memory_mib ? " with memory " : "",
                     tj->gpu_memory_mib ? "asked" : "");
        st->finished++;
        return 0;
    }
    st->run[i].remaining_ms = tj->duration_ms;
    if (!cluster_add_job(&st->c, &job))
        return tide_err_set(err, TIDE_ENOMEM, "", "out of memory adding job %zu", i + 1);
    sim_waiting_add(st, i);
    st->npending++;
    return 1;
}

/* --- elastic pools: the core's autoscaler and billing --- */

int sim_log_scale(struct sim_state *st, int64_t t, int pool, int type, int count, int64_t node_id,
                  const char *reason)
{
    struct sim_elastic *el = st->el;
    el->events_total++;
    if (el->nevents >= SIM_MAX_SCALE_EVENTS)
        return 0;
    if (!el->events && !(el->events = calloc(SIM_MAX_SCALE_EVENTS, sizeof *el->events)))
        return TIDE_ENOMEM;
    struct sim_scale_event *e = &el->events[el->nevents++];
    e->t_ms = t;
    e->pool = pool;
    e->type = type;
    e->count = count;
    e->node_id = node_id;
    snprintf(e->reason, sizeof e->reason, "%s", reason);
    return 0;
}

void sim_index_refresh(struct sim_state *st, struct node *n)
{
    if (st->c.index)
        placement_index_refresh(st->c.index, &st->c, n);
}

/* A node that no longer exists (released, failed): off the capacity. */
static void node_gone(struct sim_state *st, int k)
{
    int p = st->node_pool[k];
    st->alive_by_pool[p]--;
    st->gpus_alive_by_pool[p] -= st->node_cap[k];
    st->gpus_alive -= st->node_cap[k];
}

/* A booting node's boot time is over: it registers and is ready. */
static int node_booted(struct sim_state *st, size_t k, int64_t t)
{
    struct node *n = &st->c.nodes[k];
    if (n->state != NODE_PROVISIONING)
        return 0; /* failed since */
    n->state = NODE_READY;
    n->ready_ms = n->last_heartbeat_ms = t;
    sim_index_refresh(st, n);
    st->el->stats[st->node_pool[k]].ready++;
    if (sim_log_scale(st, t, st->node_pool[k], SIM_SCALE_READY, 1, n->id, "booted") ||
        sim_spot_node_ready(st, k, t))
        return -1;
    return 1;
}

/* One autoscaler_decide at t, carried out as the server's pool loop would:
 * creates become provisioning nodes ready boot_time_s later, unless the
 * simulated provider fails the call (then no node, and the pool's creations
 * wait out the server's backoff); the rest were set in the cluster by the
 * core. Returns how many nodes became ready now or were undrained (a pass
 * is worth running), or TIDE_ENOMEM. */
static int elastic_decide(struct sim_state *st, int64_t t)
{
    struct sim_elastic *el = st->el;
    pool_action_list_clear(&st->pactions);
    st->as.node_pools = st->node_pool; /* moves as nodes are added */
    st->as.nnode_pools = st->nnodes;
    int rc = autoscaler_decide(&st->as, &st->c, t, &st->pactions);
    el->decisions++;
    if (rc < 0)
        return rc;
    int usable = 0;
    for (size_t i = 0; i < st->pactions.len; i++) {
        const struct pool_action *a = &st->pactions.items[i];
        struct sim_pool_stats *ps = &el->stats[a->pool];
        if (sim_log_scale(st, t, a->pool, (int)a->type, a->count, a->node_id, a->reason))
            return TIDE_ENOMEM;
        st->last_activity_ms = t;
        if (a->type == POOL_CREATE) {
            if (sim_spot_create_fails(st, a->pool, ++ps->create_calls, t)) {
                char why[TIDE_REASON_MAX];
                snprintf(why, sizeof why, "provider failure (%d in a row), retrying in %llds",
                         st->create_failures[a->pool],
                         (long long)(pool_backoff_ms(st->create_failures[a->pool]) / 1000));
                if (sim_log_scale(st, t, a->pool, SIM_SCALE_CREATE_FAILED, a->count, 0, why))
                    return TIDE_ENOMEM;
                continue;
            }
            sim_spot_create_ok(st, a->pool);
            int64_t boot_ms = pool_boot_estimate_s(&el->pools[a->pool]) * 1000;
            for (int k = 0; k < a->count; k++) {
                if ((rc = add_pool_node(st, a->pool, NODE_PROVISIONING, t)))
                    return rc;
                ps->created++;
                size_t node = st->nnodes - 1;
                if (boot_ms == 0) {
                    if ((rc = node_booted(st, node, t)) < 0)
                        return TIDE_ENOMEM;
                    usable++;
                    continue;
                }
                struct sim_event ev = {
                    .t_ms = sim_time_after(t, boot_ms), .kind = SIM_EV_BOOT, .job = (uint32_t)node};
                if (sim_heap_push(&st->heap, ev) != 0)
                    return TIDE_ENOMEM;
            }
            continue;
        }
        struct node *n = cluster_find_node(&st->c, a->node_id);
        if (!n)
            continue;
        sim_index_refresh(st, n);
        size_t k = (size_t)(n->id - 1);
        switch (a->type) {
        case POOL_DRAIN: ps->drained++; break;
        case POOL_UNDRAIN: ps->undrained++, usable++; break;
        case POOL_RELEASE: ps->released++, node_gone(st, (int)k); break;
        case POOL_FAIL: ps->failed++, node_gone(st, (int)k); break;
        default: break;
        }
    }
    return usable;
}

/* After the batch's passes: decide, and while that made nodes usable at
 * once (no boot time, undrained), pass and decide again. */
static int elastic_step(struct sim_state *st, int64_t t)
{
    for (int round = 0; round < 4; round++) {
        int usable = elastic_decide(st, t);
        if (usable <= 0)
            return usable;
        if (st->npending > 0) {
            int rc = run_pass(st, t);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static void state_release(struct sim_state *st)
{
    st->c.index = NULL; /* the scheduler's (keep_index) */
    cluster_release(&st->c);
    sched_release(&st->s);
    eta_plan_release(&st->eta_plan);
    eta_estimator_release(&st->eta_est);
    action_list_release(&st->actions);
    sim_heap_release(&st->heap);
    free(st->run);
    free(st->node_used);
    free(st->node_cap);
    free(st->node_pool);
    free(st->pend);
    free(st->waiting);
    free(st->waiting_pos);
    sim_queue_release(&st->queue);
    autoscaler_release(&st->as);
    demand_release(&st->demand);
    pool_action_list_release(&st->pactions);
    action_list_release(&st->spot_actions);
    sim_budget_release(st);
}

/* The readers bound what they keep; a trace built some other way is held
 * to the same bounds, so that no sum of times the run makes overflows. */
static int check_trace_times(const struct trace *trace, struct tide_err *err)
{
    for (size_t i = 0; i < trace->njobs; i++) {
        const struct trace_job *j = &trace->jobs[i];
        if (j->submit_ms < 0 || j->submit_ms > TRACE_MAX_TIME_MS || j->duration_ms < 0 ||
            j->duration_ms > TRACE_MAX_TIME_MS)
            return tide_err_set(err, TIDE_EINVAL, "trace",
                                "trace job %zu (line %ld): submit time %lld ms or duration %lld "
                                "ms is outside 0 to %d years",
                                i + 1, j->line, (long long)j->submit_ms, (long long)j->duration_ms,
                                TRACE_MAX_YEARS);
    }
    return 0;
}

int sim_run(const struct sim_config *cfg, const struct trace *trace, const struct sim_hooks *hooks,
            struct sim_result *res, struct tide_err *err)
{
    memset(res, 0, sizeof *res);
    int rc = sim_config_validate(cfg, err);
    if (rc || (rc = check_trace_times(trace, err)))
        return rc;
    struct sim_state st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    st.trace = trace;
    st.res = res;
    cluster_init(&st.c);
    action_list_init(&st.actions);
    action_list_init(&st.spot_actions);
    sim_heap_init(&st.heap);
    struct sched_config scfg;
    sched_config_defaults(&scfg);
    scfg.order = order_by_name(cfg->policy);
    scfg.placement = placement_by_name(cfg->placement);
    scfg.backfill = cfg->backfill;
    /* The core's own preemption (by priority) emits stops for agents; the
     * sim does its requeues itself (below), so keep the core's off. */
    scfg.preemption = false;
    /* Nobody reads wait_reason during a run, and nodes change only through
     * cluster_* calls, so skip the explanations and keep the index. */
    scfg.explain = false;
    scfg.keep_index = true;
    sched_init(&st.s, &scfg);
    eta_plan_init(&st.eta_plan);
    eta_estimator_init(&st.eta_est, 0);
    st.c.jobs_any_order = true; /* passes sort; nothing here needs the order */
    size_t n = trace->njobs;
    res->njobs = n;
    res->jobs = calloc(n ? n : 1, sizeof *res->jobs);
    st.run = calloc(n ? n : 1, sizeof *st.run);
    st.waiting = calloc(n ? n : 1, sizeof *st.waiting);
    st.waiting_pos = calloc(n ? n : 1, sizeof *st.waiting_pos);
    struct victim *vic = calloc(TIDE_MAX_GPUS_PER_NODE, sizeof *vic);
    if (!res->jobs || !st.run || !st.waiting || !st.waiting_pos || !vic) {
        rc = tide_err_set(err, TIDE_ENOMEM, "", "out of memory for %zu jobs", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        res->jobs[i].submit_ms = trace->jobs[i].submit_ms;
        res->jobs[i].duration_ms = trace->jobs[i].duration_ms;
        res->jobs[i].gpus = trace->jobs[i].gpus;
        res->jobs[i].first_start_ms = -1;
        res->jobs[i].eta_ms = -1;
        st.run[i].node = -1;
        st.waiting_pos[i] = -1;
    }
    bool elastic = sim_config_elastic(cfg);
    if (elastic && !(res->elastic = st.el = calloc(1, sizeof *st.el))) {
        rc = tide_err_set(err, TIDE_ENOMEM, "", "out of memory");
        goto out;
    }
    pool_action_list_init(&st.pactions);
    if ((rc = index_projects(&st)) ||
        (rc = elastic ? build_elastic_cluster(&st) : build_cluster(&st))) {
        tide_err_set(err, rc, "", "out of memory building the cluster");
        goto out;
    }
    if ((rc = sim_budget_init(&st, elastic ? st.el->pools : st.fixed_pools, cfg->npools, err)))
        goto out;
    if (elastic && (rc = sim_spot_init(&st))) {
        tide_err_set(err, rc, "", "out of memory");
        goto out;
    }
    if (st.bud) { /* hard caps hold jobs in passes and get no nodes, as in the server */
        st.s.cfg.budgets = &st.bud->set;
        st.as.budgets = &st.bud->set;
    } else if (elastic) /* every waiting job may get nodes: kept by shape for the autoscaler */
        st.as.demand = &st.demand;
    /* Passes may be given only the jobs that could start (sim_queue.h)
     * unless something looks past them: backfill, budgets, or ETAs (the
     * ETA plan reads the last pass's order of every waiting job). */
    if (!cfg->backfill && !cfg->eta && !st.bud && !st.s.cfg.queues &&
        !st.s.cfg.fairshare && sim_queue_init(&st.queue, &st.c, st.s.cfg.order, n) != 0) {
        rc = tide_err_set(err, TIDE_ENOMEM, "", "out of memory for %zu jobs", n);
        goto out;
    }

    size_t next = 0;
    for (;;) {
        const struct sim_event *top = sim_heap_peek(&st.heap);
        bool look_planned = st.pool_tick_pending && st.pool_wake_ms != INT64_MAX;
        if ((next >= n && !top && !look_planned) || (elastic && st.finished == n))
            break; /* elastic: metering ends with the last job */
        int64_t t = next < n ? trace->jobs[next].submit_ms : INT64_MAX;
        if (top && top->t_ms < t)
            t = top->t_ms;
        if (look_planned && st.pool_wake_ms < t)
            t = st.pool_wake_ms;
        integrate(&st, t);
        if (elastic && sim_meter_tick(&st, t)) {
            rc = TIDE_ENOMEM;
            goto out;
        }
        /* passive: budget events and interruptions of nodes gone since,
         * which, like a pool look, need no sample when nothing changed. */
        bool changed = false, tick = false, passive = false;
        bool pool_tick = elastic && sim_looks_until(&st, t);
        if (st.bud && st.bud->event_at == t)
            sim_budget_tick(&st, t); /* a hold ended: st.bud->unheld, below */
        struct sim_event ev;
        int64_t spot_done_t = -1;
        while ((top = sim_heap_peek(&st.heap)) && top->t_ms == t) {
            sim_heap_pop(&st.heap, &ev);
            if (ev.kind == SIM_EV_TICK) {
                tick = true;
                st.tick_pending = false;
                continue;
            }
            if (ev.kind == SIM_EV_BUDGET) { /* metered above */
                if (st.bud->event_at == t)
                    st.bud->event_at = -1;
                passive = true;
                continue;
            }
            if (ev.kind == SIM_EV_INTERRUPT) {
                int k = sim_spot_interrupt(&st, &ev, t);
                if (k < 0) {
                    rc = k;
                    goto out;
                }
                passive |= k == 0;
                continue;
            }
            if (ev.kind == SIM_EV_SPOT) {
                /* One call handles every node whose deadline is t (and a
                 * node interrupted at t has a later one): the batch's other
                 * deadline events have nothing left to do. */
                if (spot_done_t == t)
                    continue;
                spot_done_t = t;
                int k = sim_spot_deadline(&st, t);
                if (k < 0) {
                    rc = k;
                    goto out;
                }
                changed |= k > 0;
                continue;
            }
            if (ev.kind == SIM_EV_BOOT) {
                int b = node_booted(&st, ev.job, t);
                if (b < 0) {
                    rc = TIDE_ENOMEM;
                    goto out;
                }
                changed |= b > 0;
                continue;
            }
            if (ev.gen != st.run[ev.job].gen || st.run[ev.job].node < 0)
                continue; /* preempted since this finish was planned */
            struct job *done = cluster_find_job(&st.c, (int64_t)ev.job + 1);
            sim_eta_finished(&st, done, t);
            sim_stop_running(&st, done, t);
            res->jobs[ev.job].finish_ms = t;
            if (t > res->makespan_ms)
                res->makespan_ms = t;
            cluster_remove_job(&st.c, (int64_t)ev.job + 1);
            sim_telemetry_touched(&st);
            st.finished++;
            changed = true;
        }
        size_t arrived_from = next;
        while (next < n && trace->jobs[next].submit_ms == t) {
            int a = admit(&st, next++, err);
            if (a < 0) {
                rc = a;
                goto out;
            }
            changed |= a > 0;
        }
        if (st.bud && st.bud->unheld) { /* a hold ended at t */
            changed = true;
            st.bud->unheld = false;
        }
        if (st.npending > 0 && changed && (rc = run_pass(&st, t)))
            goto out;
        if (cfg->eta && next > arrived_from && (rc = sim_eta_arrivals(&st, arrived_from, next, t)))
            goto out;
        if (cfg->preempt && st.npending > 0 && (changed || tick)) {
            for (int round = 0; round < 8; round++) {
                int p = preempt_once(&st, t, vic);
                if (p < 0) {
                    rc = p;
                    goto out;
                }
                if (p == 0)
                    break;
                if ((rc = run_pass(&st, t)))
                    goto out;
            }
        }
        if (elastic) {
            if (changed)
                st.last_activity_ms = t;
            if ((rc = elastic_step(&st, t)))
                goto out;
        }
        /* A pool look that changed nothing adds no sample (the timelines
         * are steps between samples). */
        bool quiet = (pool_tick || passive) && !changed && !tick && st.last_activity_ms != t;
        if (!quiet && (rc = push_sample(&st, t)))
            goto out;
        if (st.bud && (rc = sim_budget_schedule(&st, t)))
            goto out;
        if (elastic)
            sim_looks_plan(&st, t);
        if (cfg->preempt && st.npending > 0 && st.nrunning > 0 && !st.tick_pending) {
            struct sim_event tk = {.t_ms = sim_time_after(t, cfg->preempt_interval_ms),
                                   .kind = SIM_EV_TICK};
            if (sim_heap_push(&st.heap, tk) != 0) {
                rc = TIDE_ENOMEM;
                goto out;
            }
            st.tick_pending = true;
        }
        res->batches++;
        if (hooks && hooks->progress && (res->batches & 16383) == 0)
            hooks->progress(hooks->ctx, st.finished, n, t);
    }
    if (elastic && (rc = sim_meter_finish(&st)))
        goto out;
    /* Whatever still waits can never start (no running job left to free
     * room). One more pass, explaining this time, says why. */
    if (st.bud)
        sim_budget_unpark_all(&st);
    if (st.c.njobs > 0) {
        st.s.cfg.explain = true;
        if ((rc = run_pass(&st, st.last_t)))
            goto out;
    }
    const struct job *first = NULL;
    bool none_before = res->rejected == 0;
    for (size_t j = 0; j < st.c.njobs; j++) {
        const struct job *job = &st.c.jobs[j];
        size_t i = (size_t)(job->id - 1);
        res->jobs[i].outcome = SIM_REJECTED;
        res->jobs[i].finish_ms = res->jobs[i].submit_ms;
        res->rejected++;
        if (!first || job->id < first->id)
            first = job;
    }
    char why[TIDE_REASON_MAX];
    if (first && none_before)
        snprintf(res->first_reject_reason, sizeof res->first_reject_reason, "job %lld: %.100s",
                 (long long)first->id, wait_reason_format(first, why, sizeof why));
    if (st.bud)
        sim_budget_finish(&st);
    if (hooks && hooks->progress)
        hooks->progress(hooks->ctx, n, n, res->makespan_ms);
out:
    if (rc && err && !err->message[0])
        tide_err_set(err, rc, "", "simulation failed (%d)", rc);
    if (rc)
        sim_result_release(res);
    free(vic);
    state_release(&st);
    return rc;
}

void sim_result_release(struct sim_result *res)
{
    if (!res)
        return;
    free(res->jobs);
    free(res->samples);
    free(res->projects);
    if (res->elastic) {
        billing_release(&res->elastic->billing);
        free(res->elastic->events);
        free(res->elastic);
    }
    if (res->budgets) {
        free(res->budgets->alerts);
        free(res->budgets);
    }
    memset(res, 0, sizeof *res);
}
