/* A growable list of actions. */
#include "core/action.h"
#include "core/array.h"

#include <stdlib.h>
#include <string.h>

#include "core/core_banned.h"

void action_list_init(struct action_list *l)
{
    memset(l, 0, sizeof *l);
}

void action_list_release(struct action_list *l)
{
    if (!l)
        return;
    free(l->items);
    memset(l, 0, sizeof *l);
}

void action_list_clear(struct action_list *l)
{
    l->len = 0;
}

struct action *action_list_push(struct action_list *l, const struct action *a)
{
    if (array_reserve((void **)&l->items, &l->cap, l->len + 1, sizeof *l->items) != 0)
        return NULL;
    l->items[l->len] = *a;
    return &l->items[l->len++];
}

struct action *action_push_preempt(struct action_list *l, struct job *job)
{
    struct action a = {.type = ACTION_PREEMPT, .job_id = job->id, .attempt = job->attempt,
                       .node_id = job->node_id, .state = JOB_PREEMPTED, .exit_code = -1};
    struct action *pushed = action_list_push(l, &a);
    if (pushed) {
        job->state = JOB_PREEMPTED;
        job->requeue_reason[0] = '\0'; /* the caller's reason, if it keeps one */
    }
    return pushed;
}

const char *action_type_name(enum action_type t)
{
    static const char *const names[] = {
        [ACTION_START] = "start",           [ACTION_RUNNING] = "running",
        [ACTION_FINISH] = "finish",         [ACTION_REQUEUE] = "requeue",
        [ACTION_NODE_LOST] = "node_lost",   [ACTION_NODE_BACK] = "node_back",
        [ACTION_SEND_START] = "send_start", [ACTION_SEND_STOP] = "send_stop",
        [ACTION_ACK] = "ack",               [ACTION_PREEMPT] = "preempt",
        [ACTION_IDLE_WARN] = "idle_warn",
        [ACTION_PART_EXITED] = "part_exited", [ACTION_NODE_STOPPING] = "node_stopping",
    };
    if ((unsigned)t >= sizeof names / sizeof names[0])
        return "unknown";
    return names[t];
}
