/*
 * The scheduler's picture of the world: nodes with their GPUs, and the jobs
 * that are not finished yet. The server keeps one of these in memory as a
 * cache of the database; the simulator keeps one on a virtual clock. Plain
 * data: the owner locks it, the core reads and updates it.
 */
#ifndef TIDE_CLUSTER_H
#define TIDE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/job_state.h"
#include "core/node_jobs.h"
#include "core/wait_reason.h"

#define TIDE_MAX_GPUS_PER_NODE 64
#define TIDE_NAME_MAX 64
#define TIDE_REASON_MAX 160
#define TIDE_MAX_DEPS 32
#define TIDE_MAX_GANG_NODES 16
#define TIDE_MAX_NODE_IMAGES 64 /* container images a node reports holding (image.h) */

/* READY and LOST are nodes that joined; the rest belong to elastic pools
 * (autoscaler.h): provisioning -> ready -> draining -> released, or failed. */
enum node_state {
    NODE_READY,
    NODE_LOST,
    NODE_PROVISIONING,
    NODE_DRAINING,
    NODE_RELEASED,
    NODE_FAILED,
    /* Its agent said it is stopping (a restart, the machine going down):
     * its tasks finish their grace, no new work lands; a heartbeat of the
     * agent's next run makes it ready again. */
    NODE_STOPPING,
    NODE_STATE_COUNT
};

const char *node_state_name(enum node_state s);
/* The state called name ("ready", ...); -1 when none is. */
int node_state_from_name(const char *name);
/* Up: its agent heartbeats and may run tasks (ready, draining or stopping). */
bool node_state_is_up(enum node_state s);

struct gpu {
    int index;
    char uuid[96];
    char name[TIDE_NAME_MAX];
    int64_t memory_total_mib;
    int64_t memory_used_mib; /* telemetry */
    int utilization_pct;     /* telemetry */
    int temperature_c;
    int power_w;
    int64_t job_id; /* exclusive holder; 0 when no tide task holds it whole */
    /* Shares (gpu_share.h): jobs packed onto this GPU by memory, and the
     * memory they were promised; 0 and 0 when none. */
    int shared_jobs;
    int64_t shared_memory_mib;
    /* MIG: a GPU in MIG mode is never handed out whole; each of its
     * instances is an entry of its own with the profile ("3g.40gb") and
     * the parent's index. "" (and mig_parent unused) for a whole GPU. */
    bool mig_mode;
    char mig_profile[24];
    int mig_parent;
    /* Health (gpu_health.h): a faulty GPU gets no new work until an
     * operator clears it; fault_seq is the agent's count of faults on it
     * that the server has seen, so a fault is acted on once, and fault_run
     * the agent run (as heartbeat_run) that count is of: another run
     * counts from 0 again. */
    bool faulty;
    char fault[48];
    int64_t fault_seq;
    char fault_run[33];
};

struct node {
    int64_t id;
    char name[TIDE_NAME_MAX];
    enum node_state state;
    int64_t last_heartbeat_ms;
    /* The agent run and number of the last heartbeat read, and when the
     * first of that run arrived (monotonic; the server refuses older ones:
     * api_agent.c). */
    char heartbeat_run[33];
    int64_t heartbeat_seq, heartbeat_run_ms;
    bool agent_stopping; /* what the last heartbeat said (NODE_STOPPING) */
    /* The server's monotonic clock at the last heartbeat or registration
     * (0: none since it started): its node check measures silence by it,
     * whatever the wall clock did meanwhile (sched_loop.c). */
    int64_t heard_mono_ms;
    int cpus;
    int64_t memory_mib;
    int cpus_allocated;
    int64_t memory_allocated_mib;
    char driver[TIDE_NAME_MAX];
    int ngpus;
    struct gpu gpus[TIDE_MAX_GPUS_PER_NODE];
    /* Elastic pools (autoscaler.h); zero for a node joined by hand. */
    char pool[TIDE_NAME_MAX]; /* "" when in no pool */
    int64_t created_ms;       /* when provisioning began */
    int64_t ready_ms;         /* when its agent registered */
    int64_t idle_since_ms;    /* below the pool's scale-down utilisation since; 0: busy */
    int64_t ended_ms;         /* released or failed at */
    bool spot;                /* its pool bills spot: only preemptible work (queue_allows_node) */
    int64_t interrupt_deadline_ms; /* spot interruption (spot.h): reclaimed then; 0: none */
    /* Drained by an operator (operator.h): state stays NODE_DRAINING, so no
     * new work lands, across lost/back and agent restarts, until undrained. */
    bool drained;
    char drain_reason[TIDE_REASON_MAX];
    /* Health (gpu_health.h): GPU faults counted since fault_window_start_ms,
     * whether the drain is a health probe's (lifted when it passes), and
     * whether repeated faults failed the node. */
    int faults_in_window;
    int64_t fault_window_start_ms;
    bool probe_drained;
    int64_t probe_drained_ms; /* since when; a pool's node is replaced after boot_timeout_s */
    bool health_failed;
    /* Container images its agent holds (image.h keys), for placement's
     * image preference; beyond TIDE_MAX_NODE_IMAGES the rest are unknown. */
    int nimages;
    uint64_t image_keys[TIDE_MAX_NODE_IMAGES];
};

/* What the scheduler needs of a job; the full spec lives in the store. */
/* A gang job's share on a node other than its first: which GPUs (by
 * index, as a bit mask: nodes have at most 64) and whether its task ended. */
struct queue_config;

struct job_part {
    int64_t node_id;
    uint64_t gpu_mask;
    int ngpus;
    bool reported; /* its agent has mentioned the task */
    bool exited;
    int64_t idle_since_ms; /* idle reclaim: as the job's, for this part's GPUs */
};

struct job {
    int64_t id;
    char project[TIDE_NAME_MAX];
    char queue[TIDE_NAME_MAX];
    char user[TIDE_NAME_MAX]; /* who submitted it (the token's name), for usage; "" unknown */
    char gpu_model[128]; /* glob, "" for any */
    int priority;
    int gpus;
    int64_t gpu_memory_mib; /* minimum memory per GPU, 0 for any; gpus 1: a share */
    char mig[24];           /* MIG profile asked for ("1g.10gb"), "" for none */
    int cpus;
    int64_t memory_mib;
    int64_t max_runtime_s;  /* 0: none */
    int64_t est_runtime_s;  /* user's estimate (the simulator's oracle); 0: unknown */
    int retries;
    bool preemptible;
    uint64_t image_key; /* its container image (image.h), 0: runs as a bare process */
    int attempt; /* attempts started so far; the running one is `attempt` */
    enum job_state state;
    int64_t submit_ms;
    int64_t start_ms;         /* when the current attempt was placed; 0 when pending */
    int64_t not_before_ms;    /* pending, but not to be placed before this (retry backoff) */
    /* Not placed before this either: its last attempt may still run on a
     * node deleted while its agent was alive (operator_remove_node). In
     * memory only. */
    int64_t restart_after_ms;
    int64_t attained_gpu_ms;  /* GPU-milliseconds used by earlier attempts (LAS) */
    int64_t last_failure_ms;  /* when the last attempt failed (retry backoff); 0: none */
    int preemptions;          /* attempts ended by preemption */
    int64_t preempted_for;    /* the job its last preemption made room for (preempt_claim.h) */
    bool doomed;              /* scratch of cluster_remove_jobs_if */
    int free_attempts;        /* attempts ended by no fault of the job (preemption, its node
                                 lost, its task vanished): they use up no retries */
    int lost_attempts;        /* of those, lost with their node or task: capped
                                 (SCHED_MAX_LOST_ATTEMPTS), preemptions are not */
    bool held;                /* waiting on dependencies: not to be placed */
    bool on_hold;             /* held by an operator (operator.h): not placed until released */
    int ndeps;
    int64_t depends_on[TIDE_MAX_DEPS]; /* jobs that must succeed first */
    /* Idle reclaim (from its queue): stopped when all its GPUs stay under
     * idle_util_pct for idle_after_s; 0 disables. */
    const struct queue_config *rules; /* its queue's, for pool limits; NULL: none */
    int idle_util_pct;
    int64_t idle_after_s;
    int64_t idle_since_ms; /* 0 while busy */
    bool idle_warned;
    bool reclaim_requested;
    int effective_priority;   /* priority after aging, set by each pass */
    /* Fair share, set by each pass: within its project's quota (served
     * first), and for borrowers the project's decayed use per weight
     * (lower first). borrowed: started beyond its project's quota, so the
     * quota's owners may take the GPUs back. */
    bool in_quota;
    int64_t share_key;
    bool borrowed;
    int queue_turn, order_pos; /* round-robin between queues, set by a pass */
    bool cancel_requested;
    /* Where it runs (starting/running): */
    int64_t node_id;
    int ngpus_assigned;
    int gpu_index[TIDE_MAX_GPUS_PER_NODE];
    /* Gang jobs over several nodes (max_nodes > 1): the first node above,
     * the others here, all started together and ended together. */
    int max_nodes;
    int nparts; /* extra parts in use */
    struct job_part parts[TIDE_MAX_GANG_NODES - 1];
    bool first_part_reported;
    bool first_part_exited;
    bool gang_failed;     /* a part failed: the others are being stopped */
    bool gang_lost;       /* that part's node was lost: requeued as lost when they have */
    int gang_exit_code;   /* the first failure's exit, for the job's record */
    int gang_signal;
    char gang_reason[TIDE_REASON_MAX];
    /* Why a pending job is still waiting, set by each scheduling pass: a
     * compact cause (wait_cause, below), worded when read
     * (wait_reason_format); with kind WAIT_TEXT the words are here. Write
     * them through wait_reason_text, read either through wait_reason_format. */
    char wait_reason[TIDE_REASON_MAX];
    /* Backfill: the time this (blocked, first in line) job is promised to
     * start by (0: unknown, the jobs there give no runtime), and on which
     * node; node 0 when it holds no reservation. */
    int64_t reserved_start_ms;
    int64_t reserved_node_id;
    /* Start-time ETA of a pending job (eta.h), set by eta_plan_run: when
     * it is expected to start, and what that rests on (enum eta_basis);
     * 0 and 0 when there is none. */
    int64_t eta_start_ms;
    int eta_basis;
    /* Last, so that the fields a pass reads keep their places. */
    int queue_slot; /* 1 + its place in the last queue set asked (queue_of_job); 0: unknown */
    struct wait_cause wait_cause; /* see wait_reason */
    /* Why its attempt is being stopped and requeued ("preempted by job 15",
     * "requeued: REASON"), for the requeue's record; "" when no one said. */
    char requeue_reason[TIDE_REASON_MAX];
};

/* Positions in one of the cluster's arrays by id (cluster.c): open
 * addressing, kept current by the cluster_* calls that add, move and remove
 * items, and rebuilt at the next lookup when the array's length no longer
 * matches (an owner that filled the array itself). */
struct cluster_id_slot {
    int64_t id;
    uint32_t pos; /* position + 1; 0: empty */
};

struct cluster_id_index {
    struct cluster_id_slot *slots;
    size_t cap;      /* slots, a power of two; 0: not built */
    size_t count;    /* items covered; differs from the array's length when stale */
    bool scan;       /* duplicate ids: lookups scan the array instead */
};

struct cluster {
    struct node *nodes;
    size_t nnodes, nodes_cap;
    struct job *jobs; /* only unfinished jobs */
    size_t njobs, jobs_cap;
    struct cluster_id_index node_ids, job_ids;
    /* false (default): cluster_remove_job keeps the others in the order they
     * were added, moving every later job down (O(jobs)). true: the owner
     * depends on no order (the simulator), so the last job moves into the
     * hole instead (O(1)). */
    bool jobs_any_order;
    /* Nodes by free GPUs (placement_index.h), attached by sched_pass for the
     * length of a pass and kept current by cluster_assign, cluster_unassign
     * and cluster_put_node; NULL otherwise. While it is attached, change
     * GPU holders and node states only through those calls. */
    struct placement_index *index;
    int64_t last_assigned_node_id; /* the node a job was last assigned to (roundrobin) */
    /* The jobs with a task on each node (node_jobs.h), kept by
     * cluster_add_job, cluster_assign, cluster_assign_part and
     * cluster_unassign: change a job's placement only through those.
     * node_jobs_lost: an add ran out of memory; the next
     * cluster_node_job_ids makes the index again from the jobs (and scans
     * them while that runs out of memory too). */
    struct node_jobs node_jobs;
    bool node_jobs_lost;
    /* Jobs removed since cluster_init (cluster_remove_job,
     * cluster_remove_jobs_if): the scheduler's pass over new jobs only
     * (sched_pass_new) needs to know that none left. */
    uint64_t jobs_removed;
};

void cluster_init(struct cluster *c);
void cluster_release(struct cluster *c);

/* Adds a copy of node (or replaces the one with the same id). Returns the
 * stored node or NULL when out of memory. Pointers into the cluster stay
 * valid only until the next add. */
struct node *cluster_put_node(struct cluster *c, const struct node *node);
struct node *cluster_find_node(struct cluster *c, int64_t id);
/* Linear in the nodes. */
struct node *cluster_find_node_by_name(struct cluster *c, const char *name);

/* Adds a copy of job; NULL when out of memory. Ids are meant to be unique;
 * with duplicates, lookups fall back to scanning and find the first. */
struct job *cluster_add_job(struct cluster *c, const struct job *job);
/* The job with this id, or NULL; O(1) on average, like cluster_find_node.
 * Pointers stay valid until the next add or remove. */
struct job *cluster_find_job(struct cluster *c, int64_t id);

/* Removes the node with this id (its jobs must be off it already); later
 * nodes move down by one. Not while a placement index is attached (the
 * server detaches it after each pass). Returns false when there is none. */
bool cluster_remove_node(struct cluster *c, int64_t id);

/* Removes a job (after it finished); frees its GPUs first. Later jobs move
 * down by one, or the last takes its place when c->jobs_any_order. */
void cluster_remove_job(struct cluster *c, int64_t id);

/* Asks doomed about every job, then removes those it said true for, freeing
 * their GPUs, in one sweep that keeps the others' order: O(jobs) however
 * many go, where removing them one by one costs O(jobs) each. doomed may
 * look other jobs up; it must not add or remove any. Returns how many went. */
size_t cluster_remove_jobs_if(struct cluster *c, bool (*doomed)(struct job *job, void *ctx),
                              void *ctx);

/* Gives job the listed GPUs (and its CPUs and memory) of node. */
void cluster_assign(struct cluster *c, struct job *job, struct node *node, const int *gpu_index,
                    int ngpus);

/* Adds a further node to a gang job's placement (after cluster_assign gave
 * it its first node). */
void cluster_assign_part(struct cluster *c, struct job *job, struct node *node,
                         const int *gpu_index, int ngpus);

/* The ids of the unfinished jobs with a task on node_id (as first node or
 * gang part), in increasing id order, into out (cap of them at most).
 * Returns how many there are, which may exceed cap: then only the first cap
 * were written. O(jobs on the node) through c->node_jobs. */
size_t cluster_node_job_ids(struct cluster *c, int64_t node_id, int64_t *out, size_t cap);

/* A node's job ids as cluster_node_job_ids finds them, all of them: in
 * `some` when they fit, else in an allocation. Lives on the caller's stack
 * (ids may point into it: not to be copied). */
struct cluster_node_ids {
    int64_t *ids;
    size_t n;
    int64_t some[64];
};

/* Fills out with the ids of node_id's jobs (cluster_node_job_ids: rising
 * ids). Returns 0, or TIDE_ENOMEM with out empty. cluster_node_ids_release
 * frees what it took either way. */
int cluster_node_ids_fill(struct cluster *c, int64_t node_id, struct cluster_node_ids *out);
void cluster_node_ids_release(struct cluster_node_ids *ids);

/* Whether job has a task on node (first node or a part). */
bool job_on_node(const struct job *job, int64_t node_id);

/* The job's GPU indices on node into out; returns how many (0 if none). */
int job_gpus_on_node(const struct job *job, int64_t node_id, int *out);

/* Marks the job's task on node as ended; returns true when every task of
 * the job has now ended. */
bool job_mark_part_exited(struct job *job, int64_t node_id);

/* Gang parts: whether the job's task on node already ended (a part that
 * finished before the others), and whether that node's agent has mentioned
 * it yet (reconcile.c marks it). False for a node the job is not on. */
bool job_part_exited(const struct job *job, int64_t node_id);
bool job_part_reported(const struct job *job, int64_t node_id);

/* Whether attempt of job (NULL: none) is still on node_id, its task there
 * not ended: what an agent's report of that task is about. */
bool job_attempt_on_node(const struct job *job, int attempt, int64_t node_id);

/* Returns the job's GPUs, CPUs and memory to its node(s) and clears its placement. */
void cluster_unassign(struct cluster *c, struct job *job);

/* GPUs that tide tasks hold, across ready nodes. */
int cluster_gpus_allocated(const struct cluster *c);
int cluster_gpus_total(const struct cluster *c);

/* Free GPUs on ready nodes that cannot hold the smallest waiting job: the
 * sum over ready nodes with fewer than smallest_waiting_gpus free GPUs of
 * their free GPUs. 0 when smallest_waiting_gpus <= 0 (nothing waits). */
int cluster_fragmented_gpus(const struct cluster *c, int smallest_waiting_gpus);

/* The fewest GPUs a pending job asks for, over pending jobs asking for at
 * least one; 0 when there is none. */
int cluster_smallest_waiting_gpus(const struct cluster *c);

#endif
