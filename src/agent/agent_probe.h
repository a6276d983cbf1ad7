/*
 * The node health probe (`tide agent --health-command CMD`, a pool's
 * health_command): a shell command run at start and every interval, with a
 * timeout, without blocking the heartbeat loop. Its last result (pass or
 * fail and its last line of output) goes in every heartbeat.
 */
#ifndef TIDE_AGENT_PROBE_H
#define TIDE_AGENT_PROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define AGENT_PROBE_OUTPUT_MAX 128

struct agent_probe {
    pid_t pid;          /* the probe running now; 0: none */
    int64_t started_ms; /* monotonic */
    int64_t next_ms;    /* when the next one starts */
    bool has_result;
    bool ok;
    char output[AGENT_PROBE_OUTPUT_MAX]; /* its last non-empty line */
    int runs;
};

/* Starts the probe when it is due, collects it when it has ended, kills it
 * (a failure) past timeout_s. out_path receives its output. Returns true
 * when a new result is in. */
bool agent_probe_tick(struct agent_probe *p, const char *command, int interval_s, int timeout_s,
                      const char *out_path, int64_t now_ms);

/* Kills a probe still running and waits for it. */
void agent_probe_release(struct agent_probe *p);

#endif
