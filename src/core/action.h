/*
 * What the core decides, as data: the shells carry actions out (persist,
 * tell an agent) and the simulator applies them on its virtual clock.
 */
#ifndef TIDE_ACTION_H
#define TIDE_ACTION_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"

enum action_type {
    ACTION_START,      /* job → starting on node with gpus */
    ACTION_RUNNING,    /* agent reported the task running: starting → running */
    ACTION_FINISH,     /* job reached final `state` with reason/exit */
    ACTION_REQUEUE,    /* job back to pending (from lost, failed with retries left, ...) */
    ACTION_NODE_LOST,  /* node missed heartbeats */
    ACTION_NODE_BACK,  /* a lost node heartbeats again; a stopping one's agent runs again */
    ACTION_SEND_START, /* (re)send a start for job to its node's agent */
    ACTION_SEND_STOP,  /* tell the agent to stop task (job_id, attempt) */
    ACTION_ACK,        /* tell the agent a finished task is recorded */
    ACTION_PREEMPT,    /* job → preempted: its agent checkpoints and stops it, then it requeues */
    ACTION_IDLE_WARN,  /* job's GPUs have idled half its reclaim window: warn (an event) */
    ACTION_PART_EXITED, /* a gang job's task on node ended before its others: keep what
                         * its parts did (which ended, the first failure) */
    ACTION_NODE_STOPPING, /* node's agent is stopping: no new work lands there */
};

struct action {
    enum action_type type;
    int64_t job_id;
    int attempt;
    int64_t node_id;
    enum job_state state;      /* FINISH: the final state; REQUEUE: the state passed through */
    int exit_code;             /* -1 when none */
    int signal;                /* 0 when none */
    int64_t not_before_ms;     /* REQUEUE: not placed before then (its node was force
                                * deleted and may still run it); 0: none */
    char reason[TIDE_REASON_MAX];
};

struct action_list {
    struct action *items;
    size_t len, cap;
};

void action_list_init(struct action_list *l);
void action_list_release(struct action_list *l);
void action_list_clear(struct action_list *l);

/* Appends a copy; returns the stored action or NULL when out of memory. */
struct action *action_list_push(struct action_list *l, const struct action *a);

/* Marks job preempted and appends the ACTION_PREEMPT that has its agent
 * checkpoint and stop it; the caller writes the reason into the returned
 * action. NULL when out of memory (then job is unchanged). */
struct action *action_push_preempt(struct action_list *l, struct job *job);

const char *action_type_name(enum action_type t);

#endif
