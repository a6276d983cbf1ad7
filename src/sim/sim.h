/*
 * tide sim: replays a trace through the real core (sched_pass, the order
 * policies, placement; elastic pools: the autoscaler, billing and the spot
 * path; budgets) on a virtual clock. Events (arrivals from the sorted
 * trace; finishes, preemption re-checks, node boots, autoscaler looks, spot
 * interruptions and deadlines, budget thresholds and midnights from a
 * min-heap) are taken in time order; after each batch of same-time events
 * the driver runs one scheduling pass and applies its ACTION_STARTs. No
 * time stepping.
 *
 * The result holds per-job times and a timeline; sim_report.c turns it into
 * report.json, a table and report.html. Nothing here reads a clock or
 * prints: progress goes through a callback.
 */
#ifndef TIDE_SIM_H
#define TIDE_SIM_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/tide_err.h"
#include "core/autoscaler.h"
#include "core/billing.h"
#include "core/budget.h"
#include "core/pool.h"
#include "sim/trace.h"

#define SIM_MAX_POOLS 16
#define SIM_NAME_MAX 64
#define SIM_MAX_LISTED 64 /* explicit interruptions or failing calls per pool */

/* A spot interruption given in the config: the pool's node_index-th node
 * (in creation order, named <pool>-<index>) is reclaimed at at_ms. */
struct sim_interruption {
    int node_index;
    int64_t at_ms;
};

/* One pool of identical nodes; a fixed-size cluster is one or more pools. */
struct sim_pool {
    char name[SIM_NAME_MAX];
    int nodes;
    int gpus_per_node;
    char gpu_model[SIM_NAME_MAX];
    int64_t gpu_memory_mib;
    int cpus;           /* per node; 0: not limited */
    int64_t memory_mib; /* per node; 0: not limited */
    int64_t price_per_gpu_hour_micros; /* on-demand price, millionths of a currency unit */
    /* Elastic (max_nodes given): the core's pool (core/pool.h, the server's
     * pool fields and defaults) drives the autoscaler and billing; nodes is
     * unused. name and GPU shape are copied into it by sim_pool_core(). */
    bool elastic;
    bool price_per_node_hour_set; /* else price_per_gpu_hour x gpus_per_node */
    struct pool core;
    /* Elastic pools: what the cloud does, drawn from the run's seed. Spot
     * pools: a Poisson rate of interruptions per ready node-hour, and
     * interruptions listed by node and time; the grace is
     * core.interruption_grace_s. Any elastic pool: the probability that a
     * create call fails, and create calls (1 = the pool's first) that fail. */
    double interruptions_per_node_hour;
    struct sim_interruption interruptions[SIM_MAX_LISTED];
    int ninterruptions;
    double provider_failure_rate;
    int failing_calls[SIM_MAX_LISTED];
    int nfailing_calls;
};

struct sim_config {
    char name[SIM_NAME_MAX];      /* label in reports (the config file's base name) */
    char policy[SIM_NAME_MAX];    /* order_by_name (order_names()) */
    char placement[SIM_NAME_MAX]; /* placement_by_name */
    bool backfill;                /* sched_config.backfill */
    /* Preempt running jobs that the policy puts strictly behind a waiting
     * one (Tiresias-style LAS; priority). Default: on for las only. */
    bool preempt;
    int64_t preempt_interval_ms; /* re-check this often while jobs wait */
    int64_t preempt_overhead_ms; /* added to a preempted job's remaining run */
    bool oracle_runtime;         /* est_runtime_s from the trace duration (sjf, backfill) */
    struct sim_pool pools[SIM_MAX_POOLS];
    int npools;
    /* Elastic runs: autoscaler_decide() and metering (billing_tick's
     * counters, sim_meter.c) at every event batch and at least this often
     * while anything can change (the server's pool loop runs every
     * second). */
    int64_t autoscale_interval_ms;
    /* The run's random draws (interruptions, provider failures). */
    uint64_t seed;
    /* Project budgets (`projects:`, as in tide.yaml): caps, alert
     * thresholds, hard caps; metered by the core's budget_tick on the
     * virtual clock. Only the configured fields are set here. */
    struct budget_set budgets;
    /* Start-time ETAs (core/eta.h): each job's ETA at its arrival, scored
     * against its real start in the report's "eta" section (sim_eta.c).
     * Off by default: it plans the whole queue at every arrival. */
    bool eta;
    /* Tests: meter elastic runs with the core's billing_tick walk of every
     * node at every batch, the reference for the driver's own metering
     * (sim_meter.c), which must give the same counters. */
    bool meter_by_walk;
};

/* True when some pool is elastic: the run uses the core's autoscaler and
 * billing (cost by billing kind), else the fixed-size on-demand report. */
bool sim_config_elastic(const struct sim_config *cfg);

/* The core pool for cfg->pools[i]: the elastic pool's own, or for a fixed
 * pool one of min_nodes = max_nodes = nodes, on demand at
 * price_per_gpu_hour x gpus_per_node per node-hour, always ready. */
void sim_pool_core(const struct sim_config *cfg, int i, struct pool *out);

/* fifo, loadaware, 8 x 8 V100 nodes at 2.48 per GPU-hour, oracle runtimes. */
void sim_config_defaults(struct sim_config *cfg);

/* The server's scheduler defaults (priority, binpack, backfill on), for a
 * tide.yaml about to be read: a key the file leaves out means what it
 * means to `tide server --config` on the same file. */
void sim_config_server_scheduler(struct sim_config *cfg);

/* Fills cfg from a parsed config in tide.yaml's form (docs/sim.md), so the
 * same file runs a server: sections sim {name, preempt, preempt_interval,
 * preempt_overhead, oracle_runtime, autoscale_interval, seed}, scheduler
 * {policy, placement, backfill; the server's others are known, not
 * simulated}, server (skipped), projects[] (budgets), pools[] (the keys of
 * core/pool_spec.h, plus cpus, memory and the simulated cloud's). Unknown
 * keys are errors. Keys not given keep cfg's values. TIDE_EINVAL with err
 * naming the key. */
int sim_config_from_json(struct sim_config *cfg, const json_t *root, struct tide_err *err);

/* Checks names and sizes (policy and placement exist, pools non-empty).
 * TIDE_EINVAL with err naming the field. */
int sim_config_validate(const struct sim_config *cfg, struct tide_err *err);

/* Jobs per hour for a synthetic trace of p's size mix and durations to ask
 * for 70% of cfg's GPU-hours, an elastic pool counted at max_nodes; 60 when
 * there are no GPUs to load (sim_synth_rate.c). */
double sim_synth_default_rate(const struct sim_config *cfg, const struct trace_synth_params *p);

/* Parses a decimal price such as "2.48" into millionths. -1 when bad. */
int sim_parse_price_micros(const char *s, int64_t *out);

enum sim_outcome {
    SIM_DONE = 0,
    SIM_REJECTED = 1, /* no node could ever hold it (too many GPUs, wrong model) */
};

struct sim_job_result {
    int64_t submit_ms, first_start_ms, finish_ms, duration_ms;
    int32_t first_node; /* node id (1-based) of its first start; 0: never started */
    int64_t run_ms; /* time spent running, all attempts (duration + overheads) */
    int gpus;
    int preemptions;
    int interruptions; /* times a spot interruption requeued it */
    int project; /* index into sim_result.projects */
    int64_t budget_held_ms; /* time it waited while its project was at a hard cap */
    enum sim_outcome outcome;
    /* cfg.eta: its ETA as planned at arrival, after that time's pass (its
     * start then, if it started at once); -1: none. eta_basis: enum eta_basis. */
    int64_t eta_ms;
    int eta_basis;
};

/* State at one batch of events, kept for the timelines. */
struct sim_sample {
    int64_t t_ms;
    int32_t queued;       /* pending jobs after the pass */
    int32_t gpus_used;    /* allocated GPUs */
    int32_t free_partial; /* free GPUs on nodes that are partly used */
    int32_t running;
    int32_t gpus_provisioned; /* GPUs of nodes that exist (elastic runs: changes) */
    int64_t cost_micros;      /* elastic runs: what billing has metered so far */
};

#define SIM_MAX_SCALE_EVENTS 1000 /* kept in the report; all are counted */

/* One pool action the autoscaler took (create: count nodes), a node
 * becoming ready after its boot time, a create call the simulated provider
 * failed, or a spot interruption (count: jobs asked to checkpoint). */
struct sim_scale_event {
    int64_t t_ms;
    int pool;
    int type; /* enum pool_action_type, or SIM_SCALE_READY */
    int count;
    int64_t node_id;
    char reason[TIDE_REASON_MAX];
};
#define SIM_SCALE_READY 100
#define SIM_SCALE_CREATE_FAILED 101
#define SIM_SCALE_INTERRUPTED 102

struct sim_pool_stats {
    long created, ready, drained, undrained, released, failed;
    int peak_nodes; /* most nodes alive at once (provisioning, ready, draining) */
    long create_calls, provider_failures; /* create calls made; of them failed */
    int64_t backoff_ms;                   /* creations held back after failures, in all */
    long interruptions;                   /* spot nodes reclaimed */
    long interruptions_missed;            /* listed ones whose node was not alive then */
    long jobs_interrupted;                /* jobs asked to checkpoint by them */
    long jobs_requeued;                   /* of those, requeued at the deadline */
    int64_t grace_gpu_ms;                 /* GPU-time held from interruption to requeue */
};

/* Elastic runs: the core's billing and what the autoscaler did. */
struct sim_elastic {
    struct pool pools[SIM_MAX_POOLS];
    int npools;
    struct billing billing; /* metered from 0 to the makespan */
    struct sim_pool_stats stats[SIM_MAX_POOLS];
    struct sim_scale_event *events; /* the first SIM_MAX_SCALE_EVENTS */
    size_t nevents;
    long events_total;
    long decisions; /* autoscaler_decide calls */
    int64_t gpu_ms_provisioned; /* integral of GPUs on nodes that exist */
    int64_t gpu_ms_provisioned_by_pool[SIM_MAX_POOLS];
    /* Interrupted jobs: time from each interruption to the job's next
     * start, plus preempt_overhead, summed (what interruptions added to
     * their JCTs, before knock-on effects on other jobs). */
    int64_t interruption_delay_ms;
};

#define SIM_MAX_BUDGET_ALERTS 1000 /* kept in the report; all are counted */

/* A budget threshold crossed on the virtual clock (core/budget.h). */
struct sim_budget_alert {
    int64_t t_ms;
    int budget; /* index into sim_config.budgets.items */
    enum budget_period period;
    int pct;
    int64_t spent_micros, cap_micros;
};

/* Runs with budgets: what budget_tick reported and what hard caps held. */
struct sim_budgets {
    struct sim_budget_alert *alerts; /* the first SIM_MAX_BUDGET_ALERTS */
    size_t nalerts;
    long alerts_total;
    long alerts_by_budget[TIDE_MAX_BUDGETS];
    int64_t held_job_ms[TIDE_MAX_BUDGETS]; /* job-time waited at a hard cap, by budget */
    long jobs_held[TIDE_MAX_BUDGETS];      /* jobs that waited at it at all */
    int64_t held_ms[TIDE_MAX_BUDGETS];     /* time the project was held */
    int64_t spent_micros[TIDE_MAX_BUDGETS][BUDGET_PERIODS]; /* in the last period metered */
    int64_t held_job_ms_total;
};

struct sim_project {
    char name[TRACE_NAME_MAX];
    int64_t gpu_ms_by_pool[SIM_MAX_POOLS]; /* allocated GPU-time */
    long jobs;
};

struct sim_result {
    struct sim_job_result *jobs; /* one per trace job, in trace order */
    size_t njobs;
    struct sim_sample *samples;
    size_t nsamples, samples_cap;
    struct sim_project *projects;
    size_t nprojects;
    int gpus_provisioned_by_pool[SIM_MAX_POOLS];
    int gpus_provisioned;
    int64_t makespan_ms;    /* last finish (first submit is 0) */
    int64_t gpu_ms_allocated;
    int64_t gpu_ms_allocated_by_pool[SIM_MAX_POOLS];
    /* Busy GPU-time: allocated GPU-time x the job's utilisation, for jobs
     * whose trace row gave one; util_known_gpu_ms is their allocated
     * GPU-time (busy is known for the run when it equals gpu_ms_allocated). */
    int64_t gpu_ms_busy;
    int64_t util_known_gpu_ms;
    int64_t free_partial_gpu_ms; /* integral of free GPUs on partly used nodes */
    int64_t free_gpu_ms;         /* integral of all free GPUs */
    int64_t blocked_with_room_ms; /* jobs waited while the free GPUs in total would hold the smallest */
    long preemptions;
    long rejected;
    long passes;  /* scheduling passes run */
    long batches; /* distinct event times */
    long starts;
    char first_reject_reason[160];
    struct sim_elastic *elastic; /* NULL for fixed-size runs */
    struct sim_budgets *budgets; /* NULL without budgets */
};

/* Progress callback: called every few thousand batches with the jobs
 * finished so far and the virtual time. */
typedef void (*sim_progress_fn)(void *ctx, size_t finished, size_t total, int64_t now_ms);

struct sim_hooks {
    sim_progress_fn progress;
    void *ctx;
};

/* Replays trace through cfg's cluster and policies into res (which the
 * caller releases with sim_result_release). Returns 0, or TIDE_EINVAL with
 * err for an unknown policy or placement or a trace job whose submit time
 * or duration is outside 0 to TRACE_MAX_TIME_MS, TIDE_ENOMEM. */
int sim_run(const struct sim_config *cfg, const struct trace *trace, const struct sim_hooks *hooks,
            struct sim_result *res, struct tide_err *err);

void sim_result_release(struct sim_result *res);

/* --- reports (sim_report.c, sim_html.c) --- */

/* The report as a new JSON object (no wall-clock data, so the same inputs
 * give the same bytes). trace_label names the trace in it. */
json_t *sim_report_json(const struct sim_config *cfg, const struct trace *trace,
                        const char *trace_label, const struct sim_result *res);

/* The report's "eta" section (sim_eta.c): the error of each job's ETA at
 * arrival against its real start, overall and for the jobs that waited. */
json_t *sim_eta_report_json(const struct sim_result *res);

/* Writes the human summary table of one run to out. */
void sim_report_table(FILE *out, const json_t *report);

/* micros (millionths of a currency unit) as "1234.56" or "-0.50": cents,
 * cut rather than rounded, the sign in front. */
void sim_money_text(char *out, size_t size, int64_t micros);

/* Writes several runs' reports side by side (one column each). */
void sim_report_compare(FILE *out, json_t *const *reports, size_t n);

/* Writes report.html (one static file, inline SVG, no scripts) for the
 * runs in reports (each with its "timeline"). Returns 0 or -1 on a write error. */
int sim_report_html(FILE *out, json_t *const *reports, size_t n);

/* Writes one line per job (trace order): id, submit, first start, finish
 * (seconds), first node, outcome. What a real cluster is compared against. */
int sim_report_jobs_csv(FILE *out, const struct sim_result *res, size_t njobs);

/* Writes the report's timeline as CSV. Returns 0 or -1 on a write error. */
int sim_report_timeline_csv(FILE *out, const json_t *report);

#endif
