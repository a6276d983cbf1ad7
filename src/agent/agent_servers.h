/*
 * The servers an agent may talk to (--server URL[,URL...], docs/ha.md) and
 * which of them leads now. A request goes to the current one; when it
 * cannot be reached, or answers 503 "not the leader", the next try goes to
 * the leader it names if that is one of the configured URLs (so a follower
 * cannot send the node's token elsewhere), else to the next URL in the list.
 * Also the highest leader epoch seen, so that replies of a deposed leader
 * are recognised. Shared by the main loop and the long-poll thread: every
 * function takes the list's own mutex.
 */
#ifndef TIDE_AGENT_SERVERS_H
#define TIDE_AGENT_SERVERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/http_client.h"
#include "common/tide_err.h"

#define AGENT_SERVERS_MAX 16

struct agent_servers {
    pthread_mutex_t mu;
    const char *urls[AGENT_SERVERS_MAX]; /* borrowed from agent_opts */
    size_t count;
    size_t current;
    int64_t epoch; /* the highest leader epoch seen; 0: none yet */
};

/* Points s at urls (count 1..AGENT_SERVERS_MAX, kept by the caller), the
 * first being current. Returns 0 or TIDE_EINVAL. */
int agent_servers_init(struct agent_servers *s, char *const *urls, size_t count);
void agent_servers_release(struct agent_servers *s);

/* The index to try after current: leader's when it equals one of urls,
 * else current + 1 (wrapping). Pure; leader may be NULL or "". */
size_t agent_servers_next(const char *const *urls, size_t count, size_t current,
                          const char *leader);

/* The leader a 503 reply names ({"error":"not the leader","leader":URL}),
 * copied into buf; "" when the body is not such a reply or names none.
 * Returns true when the body says "not the leader". Pure. */
bool agent_servers_not_leader(const char *body, char *buf, size_t n);

/* The URL requests go to now, copied into buf (of size n), which is returned. */
const char *agent_servers_current(struct agent_servers *s, char *buf, size_t n);

/* Sends method to the current server's path (e.g. "/v1/agent/heartbeat")
 * as http_request does, moving on as the header says until one server
 * answers with something other than "not the leader", or every URL has
 * been tried once (each later try shares what is left of timeout_ms).
 * Returns 0 with resp filled (which may still be that 503), or TIDE_EIO
 * when no server could be reached. */
int agent_servers_request(struct agent_servers *s, const char *method, const char *path,
                          const char *token, const char *body, long timeout_ms,
                          struct http_response *resp, struct tide_err *err);

/* Notes the epoch a reply carried. Returns false when it is lower than one
 * already seen (the reply comes from a deposed leader and must be ignored);
 * true otherwise, raising the highest seen. epoch <= 0 (a reply without
 * one, from a server before HA) is always accepted. */
bool agent_servers_epoch_ok(struct agent_servers *s, int64_t epoch);

/* Whether url is one of the configured URLs (node.json's server check). */
bool agent_servers_has(const struct agent_servers *s, const char *url);

#endif
