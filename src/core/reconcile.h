/*
 * Heartbeat reconciliation: what a node's agent says it runs, against what
 * the cluster says it should run. Out come state changes (running, finished,
 * requeued) and the messages for the agent (start, stop, ack). Idempotent:
 * the same heartbeat twice yields no second start and no double count.
 */
#ifndef TIDE_RECONCILE_H
#define TIDE_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/action.h"
#include "core/cluster.h"

/* The reason an agent gives the tasks it stopped because it was itself
 * stopped: the server requeues them as preempted, whatever their exit. */
#define AGENT_STOPPED_REASON "agent stopped"

struct task_report {
    int64_t job_id;
    int attempt;
    bool exited;
    int exit_code; /* -1 when killed by a signal or unknown */
    int signal;    /* 0 when none */
    char reason[TIDE_REASON_MAX]; /* agent's words: "exit 3", "signal 9", "max_runtime", "cancelled", "start failed: ..." */
};

/* Reconciles one heartbeat of node at now_ms. Marks the node alive (and
 * back, if it was lost). Appends actions; updates and prunes the cluster
 * like the scheduler does. Returns 0 or TIDE_ENOMEM. */
int reconcile_heartbeat(struct cluster *c, struct node *node, const struct task_report *tasks,
                        size_t ntasks, int64_t now_ms, struct action_list *out);

#endif
