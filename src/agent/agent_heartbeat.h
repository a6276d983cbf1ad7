/*
 * One heartbeat: GPU telemetry, every unacknowledged task and new log
 * output go up; actions, acknowledgements and log offsets come back.
 */
#ifndef TIDE_AGENT_HEARTBEAT_H
#define TIDE_AGENT_HEARTBEAT_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"

/* Raw log bytes in one heartbeat across all tasks, so that the body stays
 * well under the server's limits even when JSON escaping inflates it. */
#define HEARTBEAT_LOG_BUDGET (256 * 1024)

/* Builds the heartbeat body (a new string the caller frees), or NULL when
 * out of memory. *more_logs is set when some log has more to send than
 * fitted. */
char *agent_heartbeat_body(struct agent *a, bool *more_logs);

/* Applies a heartbeat reply: log_offsets, then ack (forgetting finished
 * tasks whose logs the server holds), then actions. Returns 0,
 * TIDE_EINVAL when the reply is not the expected JSON, or TIDE_ECONFLICT
 * when its "epoch" is lower than one already seen (a deposed leader's:
 * nothing of it is applied); *changed is set when tasks were started. */
int agent_heartbeat_apply_reply(struct agent *a, const char *body, int64_t now_ms, bool *changed);
/* Applies the "actions" of a wait answer (POST /v1/agent/wait) the same
 * way, and nothing else of it: the same returns, the same epoch check;
 * and 1, applying nothing, when its "decision" is lower than that of the
 * last reply or answer applied (it was derived before that one, from
 * state that one already brought up to date). */
int agent_heartbeat_apply_actions(struct agent *a, const char *body, int64_t now_ms,
                                  bool *changed);

/* Sends one heartbeat and applies its reply. Returns 0; TIDE_EAUTH when the
 * node token was refused (register again); TIDE_EIO when the server could
 * not be reached or failed (err says why). */
int agent_heartbeat_send(struct agent *a, int64_t now_ms, bool *changed, bool *more_logs,
                         struct tide_err *err);

#endif
