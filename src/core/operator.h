/*
 * What an operator does by hand to jobs and nodes (tide hold, release,
 * requeue; tide nodes drain, undrain, delete), as pure changes to the
 * cluster plus the actions that carry them out. The shell persists them;
 * none of them uses up a job's retries.
 */
#ifndef TIDE_OPERATOR_H
#define TIDE_OPERATOR_H

#include <stdint.h>

#include "common/tide_err.h"
#include "core/action.h"
#include "core/cluster.h"

/* Holds a pending job: no pass places it (nor does the autoscaler count it)
 * until operator_release_job; its wait_reason says "held: REASON". 0,
 * TIDE_ENOENT (not an unfinished job), TIDE_ECONFLICT (not pending, or
 * already held). */
int operator_hold_job(struct cluster *c, int64_t job_id, const char *reason, struct tide_err *err);

/* Lets a held job be placed again. 0, TIDE_ENOENT, TIDE_ECONFLICT (not held). */
int operator_release_job(struct cluster *c, int64_t job_id, struct tide_err *err);

/* Puts a starting or running job back in the queue: appends ACTION_PREEMPT
 * (reason: "requeued: REASON"), so its agent stops it with the job's
 * checkpoint signal and, once the task has ended, the job is pending again
 * without using a retry (as a preemption). 0, TIDE_ENOENT, TIDE_ECONFLICT
 * (pending, or already stopping), TIDE_ENOMEM. */
int operator_requeue_job(struct cluster *c, int64_t job_id, const char *reason,
                         struct action_list *out, struct tide_err *err);

/* Drains a ready (or lost) node joined by hand: no new work is placed on it,
 * what runs there finishes; it stays drained through lost/back and agent
 * restarts until operator_undrain_node. Node state becomes NODE_DRAINING
 * (a lost node stays lost until it is back). 0, TIDE_ENOENT, TIDE_ECONFLICT
 * (a pool's node: its autoscaler drains it; already drained). */
int operator_drain_node(struct cluster *c, int64_t node_id, const char *reason,
                        struct tide_err *err);

/* Undoes operator_drain_node, or a drain or fault of GPU health (also on a
 * pool's node): clears the node's GPU faults (gpu_health_clear), and a
 * draining or failed node is ready again. 0, TIDE_ENOENT, TIDE_ECONFLICT
 * (neither drained nor faulty). */
int operator_undrain_node(struct cluster *c, int64_t node_id, struct tide_err *err);

/* Jobs with a task on the node (starting, running or being stopped). */
int operator_node_jobs(const struct cluster *c, int64_t node_id);

/* Removes a node joined by hand from the cluster. Jobs still on it are put
 * back in the queue (ACTION_REQUEUE, reason "node NAME deleted") without
 * using a retry; a job with a cancel under way ends cancelled. Unless the
 * node was lost, its agent may still run their tasks: those stop at the
 * latest stop_ms after it was last heard from (the agent fences itself
 * within the node timeout, or registers again and is told to stop them),
 * and the jobs are not placed again before that (restart_after_ms).
 * Returns the number of jobs requeued or ended, TIDE_ENOENT,
 * TIDE_ECONFLICT (a pool's node), TIDE_ENOMEM. */
int operator_remove_node(struct cluster *c, int64_t node_id, int64_t now_ms, int64_t stop_ms,
                         struct action_list *out, struct tide_err *err);

#endif
