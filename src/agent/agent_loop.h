/*
 * The agent's main loop: register (or reuse WORK/node.json), then every
 * tick reap tasks and enforce their deadlines, and every heartbeat interval
 * (sooner when something changed) report to the server and act on its reply.
 */
#ifndef TIDE_AGENT_LOOP_H
#define TIDE_AGENT_LOOP_H

#include <signal.h>

#include "agent/agent.h"

/* Runs until *signals becomes non-zero (SIGTERM/SIGINT), then stops every
 * task (SIGTERM, grace, SIGKILL; a second signal SIGKILLs at once), sends a
 * last heartbeat if it can and returns 0. Returns 1 without running when the
 * server refuses the first registration (a wrong join token). */
int agent_loop_run(struct agent *a, volatile sig_atomic_t *signals);

#endif
