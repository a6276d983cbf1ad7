/*
 * Sending one request through the CLI's server list (see cli_client_send in
 * client.h): which URL to try next on a connection error or a follower's
 * "not the leader", which requests may be repeated, and the one error that
 * says what each server answered. Also the submissions' idempotency keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"
#include "common/http_plain.h"

/* Whether curl's reason is about the server's certificate or the handshake. */
static int is_tls_failure(const char *why)
{
    return strstr(why, "SSL") || strstr(why, "certificate") || strstr(why, "TLS");
}

/* The error for a request that reached no server, when only one is set. */
static int unreachable_one(struct cli_client *c, const char *why, struct tide_err *err)
{
    if (is_tls_failure(why))
        return tide_err_set(err, TIDE_EIO, NULL,
                            "cannot verify the tide server at %s (from %s): %s; %s", c->server,
                            c->server_from, why,
                            c->ca ? "is that the CA that signed its certificate?"
                                  : "give the CA that signed its certificate with --ca "
                                    "(or TIDE_CA)");
    return tide_err_set(err, TIDE_EIO, NULL,
                        "cannot reach the tide server at %s (from %s): %s; start one with "
                        "'tide up' or point --server / TIDE_SERVER at it",
                        c->server, c->server_from, why);
}

/* One request to one URL. 0 with resp filled when an answer came; else
 * TIDE_EIO (or another code) with err, and *unsent when nothing left. */
static int send_to(struct cli_client *c, const char *base, const char *method, const char *path,
                   const char *body, const char *key, long timeout_ms, char *leader,
                   size_t leader_size, struct http_response *resp, int *unsent,
                   struct tide_err *err)
{
    size_t n = strlen(base) + strlen(path) + 1;
    char *url = malloc(n);
    if (!url)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    snprintf(url, n, "%s%s", base, path);
    int rc;
    leader[0] = '\0';
    if (http_plain_handles(url)) { /* for the X-Tide-Leader header */
        struct http_plain_extra x = {.idempotency_key = key};
        rc = http_plain_request(method, url, c->token, body, timeout_ms, &x, resp, err);
        *unsent = rc < 0 && x.unsent;
        snprintf(leader, leader_size, "%s", x.leader);
    } else {
        struct http_request_extra x = {.idempotency_key = key};
        rc = http_request_ex(method, url, c->token, body, timeout_ms, &x, resp, err);
        *unsent = rc < 0 && x.unsent;
    }
    free(url);
    return rc;
}

/* When resp is a follower's 503 "not the leader": 1, with the leader it
 * names (header or body) in leader ("" when it names none). */
static int is_not_leader(const struct http_response *resp, char *leader, size_t leader_size)
{
    if (resp->status != 503)
        return 0;
    json_t *root = json_loadb(resp->body, resp->len, 0, NULL);
    const char *e = json_string_value(json_object_get(root, "error"));
    int yes = (e && !strcmp(e, "not the leader")) || leader[0];
    const char *named = json_string_value(json_object_get(root, "leader"));
    if (yes && !leader[0] && named)
        snprintf(leader, leader_size, "%s", named);
    json_decref(root);
    return yes;
}

/* Appends "; URL: what" to the failover log. */
static void note(char *log, size_t size, const char *url, const char *what)
{
    size_t n = strlen(log);
    if (n < size)
        snprintf(log + n, size - n, "%s%s: %s", n ? "; " : "", url, what);
}

/* The part of "METHOD URL: reason" after the URL. */
static const char *reason_of(const struct tide_err *e)
{
    const char *why = strstr(e->message, ": ");
    return why ? why + 2 : e->message;
}

int cli_client_send(struct cli_client *c, const char *method, const char *path,
                    const char *body, const char *idempotency_key, long timeout_ms,
                    struct http_response *resp, struct tide_err *err)
{
    size_t n = c->servers.n;
    int repeatable = idempotency_key || !strcmp(method, "GET") || !strcmp(method, "DELETE");
    int hinted[CLI_SERVERS_MAX] = {0};
    char log[1024] = "";
    struct tide_err last = {0};
    size_t round = 0; /* the round's next step: c->current + round, modulo n */
    int next_hint = -1;
    memset(resp, 0, sizeof *resp);
    while (next_hint >= 0 || round < n) {
        size_t i;
        if (next_hint >= 0) {
            i = (size_t)next_hint;
            next_hint = -1;
        } else {
            i = (c->current + round++) % n;
        }
        const char *base = c->servers.urls[i];
        char leader[256];
        int unsent = 0;
        struct tide_err one = {0};
        int rc = send_to(c, base, method, path, body, idempotency_key, timeout_ms, leader,
                         sizeof leader, resp, &unsent, &one);
        if (rc < 0) {
            last = one;
            note(log, sizeof log, base, reason_of(&one));
            if (rc != TIDE_EIO || !(unsent || repeatable)) {
                c->current = i;
                c->server = base;
                break; /* the request may have been acted on: do not repeat it */
            }
            continue;
        }
        if (!is_not_leader(resp, leader, sizeof leader)) {
            c->current = i;
            c->server = base;
            if (resp->status >= 200 && resp->status < 300)
                return 0;
            rc = cli_client_http_error(c, resp->status, resp->body, err);
            http_response_release(resp);
            return rc;
        }
        http_response_release(resp);
        int at = cli_server_list_find(&c->servers, leader);
        char what[400];
        if (!leader[0])
            snprintf(what, sizeof what, "not the leader (it knows no leader yet)");
        else if (at < 0)
            snprintf(what, sizeof what, "not the leader (it names %.250s, not in the list)",
                     leader);
        else
            snprintf(what, sizeof what, "not the leader (it names %.250s)", leader);
        note(log, sizeof log, base, what);
        tide_err_set(&last, TIDE_EIO, NULL, "%s", what);
        if (at >= 0 && (size_t)at != i && !hinted[at]) {
            hinted[at] = 1;
            next_hint = at;
        }
    }
    if (n == 1 && !strstr(log, "not the leader"))
        return last.code == TIDE_EIO ? unreachable_one(c, reason_of(&last), err)
                                     : tide_err_set(err, last.code, last.field, "%s",
                                                    last.message);
    if (last.code != TIDE_EIO)
        return tide_err_set(err, last.code, last.field, "%s", last.message);
    return tide_err_set(err, TIDE_EIO, NULL, "no leading tide server answered %s %s (servers "
                                             "from %s): %s",
                        method, path, c->server_from, log);
}

int cli_client_request(struct cli_client *c, const char *method, const char *path,
                       const char *body, long timeout_ms, struct http_response *resp,
                       struct tide_err *err)
{
    return cli_client_send(c, method, path, body, NULL, timeout_ms, resp, err);
}

void cli_idempotency_key_new(char *key)
{
    unsigned char raw[16];
    ssize_t got = getrandom(raw, sizeof raw, 0);
    if (got != (ssize_t)sizeof raw) { /* no entropy source: time and pid still differ */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long long mix = (unsigned long long)ts.tv_nsec ^
                                 ((unsigned long long)ts.tv_sec << 20) ^
                                 ((unsigned long long)getpid() << 44);
        for (size_t i = 0; i < sizeof raw; i++)
            raw[i] = (unsigned char)(mix >> (8 * (i % 8))) ^ (unsigned char)(i * 37);
    }
    strcpy(key, "tide-cli-");
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(key + 9 + 2 * i, 3, "%02x", raw[i]);
}
