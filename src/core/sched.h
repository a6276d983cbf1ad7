/*
 * The scheduler: pure functions from (cluster, now) to actions. Each call
 * also updates the cluster to match its decisions, so the next call sees
 * them; the shell persists the actions and, if that fails, reloads the
 * cluster from its store.
 */
#ifndef TIDE_SCHED_H
#define TIDE_SCHED_H

#include <stdint.h>

#include "core/action.h"
#include "core/budget.h"
#include "core/cluster.h"
#include "core/fairshare.h"
#include "core/gang.h"
#include "core/order.h"
#include "core/order_keep.h"
#include "core/placement.h"
#include "core/preempt.h"
#include "core/preempt_claim.h"
#include "core/queue.h"
#include "core/sched_quiet.h"

/* A job whose attempts were lost this many times in a row (its node lost,
 * its task vanished or fenced) ends failed at the next loss rather than
 * going round the nodes for ever: work that takes its host or agent down.
 * An attempt that ends any other way, or that ran SCHED_LOST_FRESH_MS
 * before it was lost (a host that fails after hours is not the job's
 * doing), starts the count afresh. */
#define SCHED_MAX_LOST_ATTEMPTS 10
#define SCHED_LOST_FRESH_MS (60 * 60 * 1000)

struct sched_config {
    const struct order_ops *order; /* default: order_priority */
    const struct placement_ops *placement;
    struct placement_config placement_cfg;
    bool backfill;           /* EASY backfill behind the first blocked job */
    bool preemption;         /* preempt lower-priority preemptible work for a blocked job */
    bool queue_round_robin;  /* take turns between queues of equal priority */
    const struct queue_set *queues; /* caps and escalation; NULL: none */
    struct fairshare *fairshare;    /* quotas and borrowing between projects; NULL: off */
    const struct budget_set *budgets; /* hard caps hold a project's jobs (budget.h); NULL: off */
    int64_t retry_backoff_ms;       /* first retry delay, doubling per failure; 0: none */
    int64_t retry_backoff_max_ms;
    int64_t node_timeout_ms; /* no heartbeat for this long: node lost */
    /* true (default): each pass says in wait_reason why a job waits. false:
     * wait_reason is left as it was and placement is asked for no reason,
     * which skips the formatting and the scans that explain a failure; the
     * decisions are the same (the simulator). */
    bool explain;
    /* The owner changes nodes between passes only through cluster_* calls
     * (cluster_assign, cluster_unassign, cluster_remove_job,
     * cluster_put_node), so the placement index may stay attached to the
     * cluster from one pass to the next instead of being rebuilt each pass
     * (the simulator). Default false: the server writes node fields itself.
     * The index belongs to the scheduler: set c->index to NULL before
     * sched_release if the cluster lives on. */
    bool keep_index;
};

void sched_config_defaults(struct sched_config *cfg);

struct scheduler {
    struct sched_config cfg;
    struct job **order; /* scratch: pending jobs in scheduling order */
    size_t order_cap;
    /* Jobs in order after the last pass: the pending jobs it considered,
     * in its order (those it started are starting now). Valid until the
     * cluster's jobs are next added or removed (the ETA plan, eta.h). */
    size_t norder;
    struct order_keep kept; /* the last pass's order, to sort the next one faster */
    struct order_keep kept_claimed; /* the same after fair share's claims reorder it */
    struct preempt_pool preempt_pool; /* scratch: what a pass may preempt */
    struct preempt_claims claims;     /* nodes held for the jobs preempting there */
    struct gang_choice gang;          /* scratch: a multi-node placement */
    struct placement_index *index; /* nodes by free GPUs, rebuilt each pass */
    int64_t last_node_check_ms;    /* sched_check_nodes' last call, 0 before the first */
    size_t gpuless; /* scratch: collected jobs that need no free GPU (none, or a share) */
    struct sched_quiet quiet; /* what the last pass left, when it changed nothing */
    int64_t quiet_until_ms;   /* scratch: the first escalation due among the collected */
};

void sched_init(struct scheduler *s, const struct sched_config *cfg);
void sched_release(struct scheduler *s);

/* One scheduling pass: pending jobs (whose not_before_ms has come) in the
 * order policy's order, each placed where the placement strategy chooses;
 * jobs that fit nowhere wait with wait_reason set. Appends ACTION_START for
 * each placed job (its state becomes starting, attempt rises by one,
 * start_ms becomes now_ms). Returns the number placed, or TIDE_ENOMEM. */
int sched_pass(struct scheduler *s, struct cluster *c, int64_t now_ms, struct action_list *out);

/* sched_pass over only the jobs with the given ids (ids not in the cluster,
 * or of jobs not pending, are skipped), for an owner that knows which jobs
 * may be waiting (the simulator): the pass then costs in those jobs rather
 * than in every unfinished one. Given every pending job, in any order, it
 * decides exactly as sched_pass. */
int sched_pass_ids(struct scheduler *s, struct cluster *c, const int64_t *ids, size_t nids,
                   int64_t now_ms, struct action_list *out);

/* sched_pass for an owner that knows that since the last pass nothing but
 * time has changed except that jobs were appended to the cluster (with ids
 * above every earlier one). When the last pass changed nothing (placed,
 * preempted and reserved nothing), no rule moves with time (no backoff
 * waiting out, fair share, budgets or round-robin; no waiting job's
 * escalation falls due),
 * the nodes are as it left them and every new job sorts after every
 * earlier one, the earlier jobs would get the answers they got then, so
 * only the new ones are walked, from where the last pass ended: the
 * decisions and reasons are those of sched_pass, at a cost in the new jobs
 * rather than the queue. Otherwise, or when a new job waits on others (its
 * dependencies are for the owner to resolve first), it changes nothing
 * that matters and returns TIDE_ECONFLICT: run sched_pass. Else as
 * sched_pass. Passes keep what it needs (O(nodes) each) only once it has
 * been called: the first call always returns TIDE_ECONFLICT. */
int sched_pass_new(struct scheduler *s, struct cluster *c, int64_t now_ms, struct action_list *out);

/* Declares nodes lost whose last heartbeat is older than node_timeout_ms
 * and requeues their jobs, using no retry. When the caller itself stalled
 * (more than half a timeout since the last call: paused, or kept off the
 * lock), heartbeats may be waiting unread, so every node's clock is moved on
 * by the stall for this check instead of judging nodes by it (the server
 * sets each node's last heartbeat anew before every check, from its
 * monotonic clock: the next check judges by what was read meanwhile).
 * Returns the number of nodes lost now. */
int sched_check_nodes(struct scheduler *s, struct cluster *c, int64_t now_ms,
                      struct action_list *out);

/* Cancels a job: a pending one is finished now (ACTION_FINISH, removed from
 * the cluster); one on a node gets cancel_requested and is stopped through
 * its agent. Returns 1 when finished now, 0 when a stop is under way,
 * TIDE_ENOENT when the job is not active. */
int sched_cancel(struct cluster *c, int64_t job_id, struct action_list *out);

/* Ends a job's current attempt with `failure` as reason: requeued while
 * retries remain (a preempted job, or one that passed through JOB_LOST, always
 * and using up none), else finished as `final_state`. A failed exit starts the retry backoff. Frees its resources;
 * removes it from the cluster when final. Used for node loss, vanished
 * tasks and failed exits. */
void sched_fail_attempt(struct cluster *c, struct job *job, enum job_state passed_through,
                        enum job_state final_state, const char *failure, int exit_code,
                        int signal, int64_t now_ms, struct action_list *out);

#endif
