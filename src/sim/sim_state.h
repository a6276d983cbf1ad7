/*
 * The simulator driver's private state, shared by sim_driver.c (the event
 * loop, placement of starts, preemption, elastic pools), sim_budget.c
 * (project budgets on the virtual clock) and sim_spot.c (spot
 * interruptions and provider failures). Not part of the sim's interface.
 */
#ifndef TIDE_SIM_STATE_H
#define TIDE_SIM_STATE_H

#include "core/autoscaler.h"
#include "core/budget.h"
#include "core/eta.h"
#include "core/sched.h"
#include "sim/sim.h"
#include "sim/sim_heap.h"
#include "sim/sim_queue.h"

/* The latest virtual time. Event times saturate here instead of wrapping
 * round to negative ones: a trace within its bounds (TRACE_MAX_TIME_MS)
 * comes nowhere near, but queued years of work add up; half of INT64_MAX
 * leaves room for the report's sums of a time and a bucket width. */
#define SIM_TIME_MAX (INT64_MAX / 2)

/* The time d >= 0 after t, at most SIM_TIME_MAX. */
static inline int64_t sim_time_after(int64_t t, int64_t d)
{
    return d >= SIM_TIME_MAX - t ? SIM_TIME_MAX : t + d;
}

struct sim_run_job {
    int64_t remaining_ms; /* run time still owed */
    int64_t run_start_ms; /* start of the current attempt */
    int32_t node;         /* node index while running, else -1 */
    uint32_t gen;
    /* Spot: interrupted_ms is when the current attempt was asked to
     * checkpoint (its progress ends there; its GPUs are held until the
     * deadline); delay_from_ms, the interruption its next start answers. */
    bool interrupted, delay_pending;
    int64_t interrupted_ms, delay_from_ms;
};

/* Project budgets (sim_budget.c). */
struct sim_budget_state {
    struct budget_set set;    /* the config's, metered by budget_tick */
    const struct pool *pools; /* what budget_tick prices GPUs by */
    int npools;
    int32_t *of_project; /* sim project index -> budget index, -1: none */
    int64_t *held_mark;  /* per trace job: its budget's held_ms when it began to wait */
    /* Waiting jobs of projects at a hard cap, kept out of the passes' list
     * (any order), and each trace job's place in it (-1: not parked). */
    int32_t *parked, *parked_pos;
    size_t nparked;
    int64_t rate[TIDE_MAX_BUDGETS];       /* price per hour of the GPUs it holds now, micro-units */
    int32_t pending[TIDE_MAX_BUDGETS];    /* its jobs waiting now */
    bool held[TIDE_MAX_BUDGETS];          /* at a hard cap now */
    int64_t event_at;                     /* the budget event in the heap; -1: none */
    bool unheld;      /* a hold ended in a tick since the driver last looked */
};

struct sim_state {
    const struct sim_config *cfg;
    const struct trace *trace;
    struct sim_result *res;
    struct cluster c;
    struct scheduler s;
    struct action_list actions;
    struct sim_heap heap;
    struct sim_run_job *run;
    int *node_used, *node_cap, *node_pool;
    size_t nnodes, nodes_cap;
    int used_total, free_partial;
    size_t npending, nrunning, finished;
    bool tick_pending;
    int64_t last_t;
    struct gpu pool_gpu[SIM_MAX_POOLS]; /* one GPU of each pool, for admission */
    /* Jobs waiting (ids, any order) for sched_pass_ids, and each trace
     * job's place in that list (-1: not waiting). */
    int64_t *waiting;
    int32_t *waiting_pos;
    size_t nwaiting;
    /* The same jobs by shape in policy order, when passes may be given
     * only those that could start (sim_queue.h); off otherwise. */
    struct sim_queue queue;
    /* preemption scratch */
    struct job **pend;
    size_t pend_cap;
    struct job *pend_top[16]; /* the first few waiting, from the queue */
    /* Elastic runs: the core's autoscaler and billing over el->pools. */
    struct sim_elastic *el;
    struct autoscaler as;
    struct demand demand; /* the waiting jobs by shape, for as.demand (no budgets) */
    struct pool_action_list pactions;
    int gpus_alive; /* GPUs of nodes that exist; constant in fixed-size runs */
    int alive_by_pool[SIM_MAX_POOLS], gpus_alive_by_pool[SIM_MAX_POOLS];
    int node_seq[SIM_MAX_POOLS];
    /* The chain of autoscaler looks (sim_looks.c): the next look's time
     * while one is planned, and when the next is made (the looks in
     * between decide nothing). */
    bool pool_tick_pending;
    int64_t pool_next_ms, pool_wake_ms;
    int64_t last_activity_ms;
    int32_t touched[TIDE_MAX_GANG_NODES + 1]; /* nodes a stopped job was on */
    int ntouched;
    /* Fixed-size runs: the pools as the core sees them (budget prices). */
    struct pool fixed_pools[SIM_MAX_POOLS];
    struct sim_budget_state *bud; /* NULL without budgets */
    /* Spot interruptions and provider failures (sim_spot.c), per pool. */
    uint64_t rng_interrupt[SIM_MAX_POOLS], rng_fail[SIM_MAX_POOLS];
    int create_failures[SIM_MAX_POOLS]; /* in a row */
    struct action_list spot_actions;
    /* Start-time ETAs (cfg->eta; sim_eta.c). */
    struct eta_plan eta_plan;
    struct eta_estimator eta_est;
};

/* --- sim_driver.c helpers used by the other files --- */

/* Ends the current run of job at t: accounts its GPU time on each of its
 * nodes and frees them in the sim's counts. Returns the run's length. */
int64_t sim_stop_running(struct sim_state *st, const struct job *job, int64_t t);
/* Trace job i begins to wait (pending). */
void sim_waiting_add(struct sim_state *st, size_t i);
/* The list of waiting jobs the passes are given (sched_pass_ids). */
void sim_waiting_list_add(struct sim_state *st, size_t i);
void sim_waiting_list_remove(struct sim_state *st, size_t i);
void sim_telemetry_touched(struct sim_state *st);
void sim_index_refresh(struct sim_state *st, struct node *n);
int sim_log_scale(struct sim_state *st, int64_t t, int pool, int type, int count, int64_t node_id,
                  const char *reason);

/* --- sim_meter.c: elastic runs' billing --- */

/* Meters the pools' nodes from the last call to t, as billing_tick would.
 * Returns 0 or TIDE_ENOMEM. */
int sim_meter_tick(struct sim_state *st, int64_t t);
/* At the end of the run: the GPU-time each project used per pool, into
 * the billing's usage rows. Returns 0 or TIDE_ENOMEM. */
int sim_meter_finish(struct sim_state *st);

/* --- sim_budget.c --- */

/* Copies the config's budgets and starts their clock; no-op without any.
 * Returns 0 or TIDE_ENOMEM (the only allocations budgets make). */
int sim_budget_init(struct sim_state *st, const struct pool *pools, int npools,
                    struct tide_err *err);
void sim_budget_release(struct sim_state *st);
/* Meters to t (a no-op when metered to t already), records the thresholds
 * crossed; sets bud->unheld when a hard cap ended (a pass is worth running). */
void sim_budget_tick(struct sim_state *st, int64_t t);

/* A job stopped and requeued (preempted or interrupted), its remaining run
 * already set: adds the restart overhead, updates the oracle estimate, and
 * puts it back among the waiting (sim_driver.c). */
void sim_back_in_queue(struct sim_state *st, struct job *job);
/* Meters to t if trace job i's project has a budget: call before its GPUs
 * change. */
void sim_budget_meter_job(struct sim_state *st, size_t i, int64_t t);
/* Meters to t if a budgeted job waits where a pass could start it: call
 * before a pass. */
void sim_budget_meter_starts(struct sim_state *st, int64_t t);
/* Advances the held clocks and held job-time over [t - dt, t). */
void sim_budget_integrate(struct sim_state *st, int64_t dt);
/* Trace job i starts (sign +1) or stops (-1) holding gpus GPUs of pool. */
void sim_budget_gpus(struct sim_state *st, size_t i, int pool, int gpus, int sign);
/* Trace job i begins (+1) or ends (-1) waiting, at the current held clock.
 * Returns true when it began to wait at a hard cap: the budget keeps it
 * aside (parked) instead of the waiting list, until the hold ends, as every
 * pass would skip it (sched_pass asks budget_holds_job of each job). */
bool sim_budget_waiting(struct sim_state *st, size_t i, int sign);
/* Whether trace job i's project is at a hard cap now. */
bool sim_budget_holds(const struct sim_state *st, size_t i);
/* Puts every parked job back in the waiting list (the final pass). */
void sim_budget_unpark_all(struct sim_state *st);
/* After a batch at t: the next time a threshold is crossed at the current
 * rates, or a UTC day begins, becomes a budget event. 0 or TIDE_ENOMEM. */
int sim_budget_schedule(struct sim_state *st, int64_t t);
/* At the end: spend of the last periods into the result. */
void sim_budget_finish(struct sim_state *st);

/* --- sim_eta.c --- */

/* Trace job i finishes at t (it is still in the cluster): its run feeds
 * the learned runtimes. */
void sim_eta_finished(struct sim_state *st, const struct job *job, int64_t t);
/* After the pass at t: the ETAs of trace jobs [from, to), which arrived at
 * t, into the result. 0 or TIDE_ENOMEM. */
int sim_eta_arrivals(struct sim_state *st, size_t from, size_t to, int64_t t);

/* --- sim_looks.c --- */

/* Elastic runs look every autoscale_interval while jobs run, and this long
 * after the last change when none do. */
#define SIM_POOL_HORIZON_MS (8LL * 86400 * 1000)

/* At the start of the batch at t: counts the planned looks before t that
 * were not made (they decided nothing) and returns whether the batch
 * makes one. */
bool sim_looks_until(struct sim_state *st, int64_t t);
/* At the end of the batch at t (after its looks): plans the next look as
 * the server's pool loop would and sets pool_wake_ms, when it is made. */
void sim_looks_plan(struct sim_state *st, int64_t t);

/* --- sim_spot.c --- */

/* Seeds the per-pool draws and queues the listed interruptions and the
 * first random ones of the nodes ready at 0. 0 or TIDE_ENOMEM. */
int sim_spot_init(struct sim_state *st);
/* Node k of a spot pool became ready at t: draws its next interruption. */
int sim_spot_node_ready(struct sim_state *st, size_t k, int64_t t);
/* An interruption event (ev.job: node index; ev.gen > 0: the listed
 * interruption gen - 1 of pool ev.job). 0 or TIDE_ENOMEM. */
int sim_spot_interrupt(struct sim_state *st, const struct sim_event *ev, int64_t t);
/* An interrupted node's deadline: its jobs are requeued (spot_check).
 * Returns the number requeued, or TIDE_ENOMEM. */
int sim_spot_deadline(struct sim_state *st, int64_t t);
/* Whether the simulated provider fails this create call of pool p (the
 * pool's calls-th); on failure the backoff is set as the server sets it. */
bool sim_spot_create_fails(struct sim_state *st, int p, long call, int64_t t);
/* A create call of pool p succeeded: its failures in a row start again. */
void sim_spot_create_ok(struct sim_state *st, int p);

#endif
