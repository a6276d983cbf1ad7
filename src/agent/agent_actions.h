/*
 * Carrying out the actions a heartbeat reply brings: `start` a task (once
 * per job and attempt, however often the server sends it) and `stop` one.
 */
#ifndef TIDE_AGENT_ACTIONS_H
#define TIDE_AGENT_ACTIONS_H

#include <jansson.h>
#include <stdbool.h>

#include "agent/agent.h"

/* Applies one action object. A start that is malformed still creates a
 * task, reported as `start failed: <why>`, so the server learns of it
 * instead of resending it forever; one without job_id or attempt is logged
 * and skipped. Returns true when the set of tasks changed. */
bool agent_actions_apply(struct agent *a, json_t *action, int64_t now_ms);

#endif
