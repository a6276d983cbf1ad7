/* The agent's server list and leader following (agent_servers.h). */
#include "agent/agent_servers.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/log.h"

/* The shortest try left for a later server when the budget runs low. */
#define SERVERS_MIN_TRY_MS 200

int agent_servers_init(struct agent_servers *s, char *const *urls, size_t count)
{
    memset(s, 0, sizeof *s);
    if (count == 0 || count > AGENT_SERVERS_MAX)
        return TIDE_EINVAL;
    if (pthread_mutex_init(&s->mu, NULL) != 0)
        return TIDE_EINVAL;
    for (size_t i = 0; i < count; i++)
        s->urls[i] = urls[i];
    s->count = count;
    return 0;
}

void agent_servers_release(struct agent_servers *s)
{
    if (s && s->count)
        pthread_mutex_destroy(&s->mu);
    if (s)
        memset(s, 0, sizeof *s);
}

size_t agent_servers_next(const char *const *urls, size_t count, size_t current, const char *leader)
{
    if (count == 0)
        return 0;
    if (leader && *leader) {
        size_t n = strlen(leader);
        while (n > 1 && leader[n - 1] == '/') /* "http://a:1/" names http://a:1 */
            n--;
        for (size_t i = 0; i < count; i++)
            if (strlen(urls[i]) == n && !strncmp(urls[i], leader, n))
                return i;
    }
    return (current + 1) % count;
}

bool agent_servers_not_leader(const char *body, char *buf, size_t n)
{
    if (n)
        buf[0] = '\0';
    json_t *root = body ? json_loads(body, 0, NULL) : NULL;
    const char *error = json_string_value(json_object_get(root, "error"));
    bool not_leader = error && !strcmp(error, "not the leader");
    const char *leader = json_string_value(json_object_get(root, "leader"));
    if (not_leader && leader && n)
        snprintf(buf, n, "%s", leader);
    json_decref(root);
    return not_leader;
}

const char *agent_servers_current(struct agent_servers *s, char *buf, size_t n)
{
    pthread_mutex_lock(&s->mu);
    snprintf(buf, n, "%s", s->count ? s->urls[s->current] : "");
    pthread_mutex_unlock(&s->mu);
    return buf;
}

/* Moves on from index tried (unless another thread already has). */
static void move_on(struct agent_servers *s, size_t tried, const char *leader)
{
    pthread_mutex_lock(&s->mu);
    if (s->current == tried) {
        s->current = agent_servers_next(s->urls, s->count, tried, leader);
        if (s->current != tried)
            log_info("server %s %s; trying %s", s->urls[tried],
                     leader ? "is not the leader" : "cannot be reached", s->urls[s->current]);
    }
    pthread_mutex_unlock(&s->mu);
}

int agent_servers_request(struct agent_servers *s, const char *method, const char *path,
                          const char *token, const char *body, long timeout_ms,
                          struct http_response *resp, struct tide_err *err)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    memset(resp, 0, sizeof *resp);
    /* every URL once, plus one hop to a leader a follower names */
    for (size_t tries = 0; tries <= s->count; tries++) {
        pthread_mutex_lock(&s->mu);
        size_t idx = s->current;
        char url[1024];
        int len = snprintf(url, sizeof url, "%s%s", s->urls[idx], path);
        pthread_mutex_unlock(&s->mu);
        if (len < 0 || (size_t)len >= sizeof url)
            return tide_err_set(err, TIDE_EIO, NULL, "server URL too long");
        long left = (long)(deadline - clock_mono_ms());
        if (tries > 0 && left < SERVERS_MIN_TRY_MS)
            left = SERVERS_MIN_TRY_MS;
        /* the agent protocol does nothing twice for a request sent again
         * (heartbeats carry states and log offsets, waits change nothing) */
        struct http_request_extra x = {.repeatable = 1};
        int rc = http_request_ex(method, url, token, body, left > 0 ? left : 1, &x, resp, err);
        if (rc != 0) {
            /* a cancelled request (agent_wake_stop) is no sign of a dead server */
            if (s->count == 1 || http_client_cancelled())
                return TIDE_EIO;
            move_on(s, idx, NULL);
            continue;
        }
        char leader[512];
        if (resp->status != 503 || !agent_servers_not_leader(resp->body, leader, sizeof leader))
            return 0;
        if (tries == s->count || s->count == 1)
            return 0; /* the caller sees the 503 */
        http_response_release(resp);
        move_on(s, idx, leader);
    }
    return tide_err_set(err, TIDE_EIO, NULL, "no server of %zu answered", s->count);
}

bool agent_servers_epoch_ok(struct agent_servers *s, int64_t epoch)
{
    if (epoch <= 0)
        return true;
    pthread_mutex_lock(&s->mu);
    bool ok = epoch >= s->epoch;
    if (ok)
        s->epoch = epoch;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

bool agent_servers_has(const struct agent_servers *s, const char *url)
{
    for (size_t i = 0; i < s->count; i++)
        if (!strcmp(s->urls[i], url))
            return true;
    return false;
}
