/*
 * Spot interruption, pure: a spot node the cloud reclaims (told by the
 * provider, or by `tide nodes interrupt`) stops taking work at once, its
 * tasks are asked to checkpoint and stop like preempted ones, and at the
 * deadline the tasks still there are requeued as preempted (no retry used)
 * so they finish elsewhere. The autoscaler then releases the empty node and
 * creates replacements if jobs still need them.
 */
#ifndef TIDE_SPOT_H
#define TIDE_SPOT_H

#include <stdint.h>

#include "core/action.h"
#include "core/cluster.h"

/* Interrupts node at now_ms with grace_ms until it is gone: state
 * draining, interrupt_deadline_ms set, an ACTION_PREEMPT ("spot
 * interruption: why") for each job running or starting on it. Returns the
 * number of jobs asked to stop, or TIDE_EINVAL when the node is already
 * interrupted or ended, TIDE_ENOMEM. */
int spot_interrupt(struct cluster *c, struct node *node, int64_t now_ms, int64_t grace_ms,
                   const char *why, struct action_list *out);

/* The seconds a task asked to checkpoint and stop on node gets before
 * SIGKILL: kill_grace_s, or on an interrupted node the time left to its
 * deadline when that is longer (the pool's interruption grace is the
 * checkpoint's, not cut short by the server's kill grace). */
int spot_kill_grace_s(const struct node *node, int64_t now_ms, int kill_grace_s);

/* The same for every task of job (all get it): the longest over the nodes
 * it holds, so a gang's ranks on nodes not interrupted wait with the one
 * on the interrupted node for a checkpoint they make together. */
int spot_job_kill_grace_s(struct cluster *c, const struct job *job, int64_t now_ms,
                          int kill_grace_s);

/* At each interrupted node's deadline, requeues the jobs still on it
 * (ACTION_REQUEUE, state preempted) and frees their GPUs. Returns the
 * number of jobs requeued. */
int spot_check(struct cluster *c, int64_t now_ms, struct action_list *out);

#endif
