/*
 * The HTTP front: libmicrohttpd with a thread per connection, request
 * bodies collected up to SERVER_MAX_BODY_BYTES, bearer-token checks, the
 * route table, and JSON error bodies for everything that goes wrong. With
 * an agent listener (server.agent_listen) a second daemon serves the agent
 * protocol alone, with its own share of the connection budget.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_write.h"
#include "common/log.h"
#include "common/port_owner.h"
#include "common/utf8.h"
#include "server/agent_wake.h"
#include "server/http_guard.h"
#include "server/http_tls.h"
#include "server/pool_loop.h"
#include "server/server.h"

/* What a connection keeps across its requests (MHD's socket context). */
struct http_conn {
    struct auth_memo auth; /* its client's token, hashed once (auth_memo.h) */
};

/* libmicrohttpd's memory per connection (its default is 32 KiB): it
 * clears all of it after every request of a kept-alive connection, and
 * half of it again with the read buffer: at 32 KiB, 48 KiB of memset per
 * request (a quarter of a submit's instructions as callgrind counts them,
 * byte by byte; about 1.5% of its time under perf). 16 KiB still takes
 * request headers of up to about 14 KiB (431 beyond: docs/api.md
 * "Connection limits"). */
#define HTTP_CONNECTION_MEMORY_BYTES 16384

/* A request's body as it arrives: in the struct itself up to
 * UPLOAD_INLINE_BYTES (a job spec is a few hundred bytes), else malloc'd.
 * The struct stays under 1 KiB, which glibc's per-thread cache serves
 * (a larger one took as long to allocate as the buffer it saves). */
#define UPLOAD_INLINE_BYTES 960
struct upload {
    char *data; /* inline or malloc'd; NULL until a byte arrives */
    size_t len, cap;
    bool too_large;
    bool unwanted; /* its token cannot pass: the body is dropped as it comes */
    bool body_ignored;      /* GET or HEAD: no route reads a body, so none is kept */
    bool framing_ambiguous; /* Content-Length and Transfer-Encoding both: 400, closed */
    double arrived_s; /* monotonic, for the submit latency histogram */
    char inline_data[UPLOAD_INLINE_BYTES];
};
_Static_assert(sizeof(struct upload) <= 1024, "struct upload within glibc's tcache sizes");

int api_error(struct api_reply *reply, const struct tide_err *err)
{
    reply->status = tide_errcode_http_status(err->code);
    json_decref(reply->json);
    /* utf8_json_string: a message quoting a client's bytes cut or not
     * UTF-8 is still answered as itself, not as a failure of the reply */
    reply->json = json_pack("{s:{s:s, s:o}}", "error", "code", tide_errcode_name(err->code),
                            "message", utf8_json_string(err->message));
    if (reply->json && err->field[0])
        json_object_set_new(json_object_get(reply->json, "error"), "field",
                            utf8_json_string(err->field));
    return 0;
}

int api_error_msg(struct api_reply *reply, int code, const char *field, const char *fmt, ...)
{
    struct tide_err err;
    tide_err_clear(&err);
    err.code = code;
    snprintf(err.field, sizeof err.field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err.message, sizeof err.message, fmt, ap);
    va_end(ap);
    utf8_trim_tail(err.message); /* a quoted value cut at the end */
    return api_error(reply, &err);
}

const char *api_query(const struct api_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *api_query_get(void *ctx, const char *name)
{
    return api_query(ctx, name);
}

struct unknown_scan {
    const char *const *known;
    const char *first;
};

static enum MHD_Result note_unknown(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    (void)value;
    struct unknown_scan *u = cls;
    for (const char *const *k = u->known; *k; k++)
        if (!strcmp(*k, key))
            return MHD_YES;
    u->first = key;
    return MHD_NO;
}

const char *api_query_unknown(const struct api_request *req, const char *const *known)
{
    struct unknown_scan u = {known, NULL};
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, note_unknown, &u);
    return u.first;
}

/* Parses "/v1/jobs/123" style ids strictly: digits only, no overflow. */
static int parse_id(const char *s, int64_t *out)
{
    if (!*s)
        return -1;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

static int route_job(struct server *srv, struct api_request *req, const char *rest,
                     struct api_reply *reply)
{
    char idbuf[32];
    const char *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    int64_t id;
    if (n >= sizeof idbuf)
        return api_error_msg(reply, TIDE_ENOENT, "id", "job id '%.32s' is not a number", rest);
    memcpy(idbuf, rest, n);
    idbuf[n] = '\0';
    if (parse_id(idbuf, &id) != 0)
        return api_error_msg(reply, TIDE_ENOENT, "id", "job id '%s' is not a number", idbuf);
    bool get = !strcmp(req->method, "GET");
    if (!slash && get)
        return api_jobs_get(srv, req, id, reply);
    if (!slash && !strcmp(req->method, "DELETE"))
        return api_jobs_cancel(srv, req, id, reply);
    if (slash && !strcmp(slash, "/logs") && get)
        return api_jobs_logs(srv, req, id, reply);
    if (slash && !strcmp(req->method, "POST") &&
        (!strcmp(slash, "/hold") || !strcmp(slash, "/release") || !strcmp(slash, "/requeue")))
        return api_jobs_operate(srv, req, id, slash + 1, reply);
    return api_error_msg(reply, TIDE_ENOENT, NULL, "no route for %s %s", req->method, req->path);
}

/* /v1/nodes/{name}/drain|undrain (POST) and /v1/nodes/{name} (DELETE). */
static int route_node(struct server *srv, struct api_request *req, const char *rest,
                      struct api_reply *reply)
{
    char name[TIDE_NAME_MAX];
    const char *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    if (n == 0 || n >= sizeof name)
        return api_error_msg(reply, TIDE_ENOENT, "node", "no node called '%.64s'", rest);
    memcpy(name, rest, n);
    name[n] = '\0';
    bool post = !strcmp(req->method, "POST");
    if (!slash && !strcmp(req->method, "DELETE"))
        return api_nodes_operate(srv, req, name, "delete", reply);
    if (slash && post && (!strcmp(slash, "/drain") || !strcmp(slash, "/undrain")))
        return api_nodes_operate(srv, req, name, slash + 1, reply);
    return api_error_msg(reply, TIDE_ENOENT, NULL, "no route for %s %s", req->method, req->path);
}

static int route(struct server *srv, enum http_role role, struct api_request *req,
                 struct api_reply *reply)
{
    const char *m = req->method, *p = req->path;
    bool get = !strcmp(m, "GET"), post = !strcmp(m, "POST");
    if (!strcmp(p, "/healthz") && get) {
        reply->status = 200;
        reply->json = json_pack("{s:s}", "status", "ok");
        if (reply->json)
            lead_health_fields(&srv->lead, reply->json);
        return 0;
    }
    /* Each listener its own routes, refused before any token is looked at. */
    bool agent_path = !strncmp(p, "/v1/agent/", 10);
    if (role == HTTP_AGENT && !agent_path)
        return api_error_msg(reply, TIDE_ENOENT, NULL,
                             "the agent listener serves only /v1/agent/* and /healthz; the API "
                             "is on %s:%d", srv->cfg.listen_host, srv->cfg.listen_port);
    if (role == HTTP_MAIN && agent_path && srv->cfg.agent_listen)
        return api_error_msg(reply, TIDE_ENOENT, NULL,
                             "agents use the agent listener %s:%d (server.agent_listen), not "
                             "this address: point tide agent --server there",
                             srv->cfg.agent_listen_host, srv->cfg.agent_listen_port);
    if (get && (!strcmp(p, "/") || !strncmp(p, "/static/", 8)))
        return api_web_static(srv, req, reply);
    struct tide_err err;
    tide_err_clear(&err);
    if (auth_check(srv, req, &err) != 0)
        return api_error(reply, &err);
    /* With a client CA, the agent protocol also needs a certificate it signed. */
    if (agent_path && srv->cfg.tls_client_ca[0] && http_tls_check_client(req->conn, &err) != 0)
        return api_error(reply, &err);
    /* ... and, if asked, one of the node's own: a node token and a bound join
     * token name it (the shared join token is checked against the name it
     * registers, api_agent.c). */
    if (agent_path && srv->cfg.tls_client_cn_is_node &&
        (req->token.kind == TOKEN_NODE || req->token.kind == TOKEN_JOIN_BOUND ||
         req->token.kind == TOKEN_JOIN_USED) &&
        http_tls_client_name_is(req->conn, req->token.name, &err) != 0)
        return api_error(reply, &err);
    /* Join and node tokens are for the agent protocol only, and user tokens never are. */
    bool agent_token = req->token.kind == TOKEN_JOIN || req->token.kind == TOKEN_JOIN_BOUND ||
                       req->token.kind == TOKEN_JOIN_USED || req->token.kind == TOKEN_NODE;
    if (agent_path != agent_token)
        return api_error_msg(reply, TIDE_EPERM, NULL, "this token may not call %s", p);
    if (req->token.kind == TOKEN_METRICS && !(get && !strcmp(p, "/metrics")))
        return api_error_msg(reply, TIDE_EPERM, NULL, "a metrics token may only read /metrics");
    if (!strcmp(p, "/v1/agent/register") && post)
        return api_agent_register(srv, req, reply);
    if (!strcmp(p, "/v1/agent/heartbeat") && post)
        return api_agent_heartbeat(srv, req, reply);
    if (!strcmp(p, "/v1/agent/wait") && post)
        return api_agent_wait(srv, req, reply);
    if (!strcmp(p, "/v1/jobs") && post)
        return api_jobs_submit(srv, req, reply);
    if (!strcmp(p, "/v1/jobs:batch") && post)
        return api_jobs_submit_batch(srv, req, reply);
    if (!strcmp(p, "/v1/jobs") && get)
        return api_jobs_list(srv, req, reply);
    if (!strncmp(p, "/v1/jobs/", 9))
        return route_job(srv, req, p + 9, reply);
    if (!strcmp(p, "/v1/pools") && get)
        return api_pools_list(srv, req, reply);
    if (!strcmp(p, "/v1/nodes") && get)
        return api_nodes_list(srv, req, reply);
    if (!strncmp(p, "/v1/nodes/", 10) && post) { /* /v1/nodes/ID/interrupt */
        char *end;
        long long id = strtoll(p + 10, &end, 10);
        if (end != p + 10 && id > 0 && !strcmp(end, "/interrupt"))
            return api_nodes_interrupt(srv, req, id, reply);
    }
    if (!strncmp(p, "/v1/nodes/", 10) && (post || !strcmp(m, "DELETE")))
        return route_node(srv, req, p + 10, reply);
    if (!strcmp(p, "/v1/projects") && get)
        return api_projects_list(srv, req, reply);
    if (!strcmp(p, "/v1/usage") && get)
        return api_usage_get(srv, req, reply);
    if (!strcmp(p, "/v1/queues") && get)
        return api_queues_list(srv, req, reply);
    if (!strcmp(p, "/v1/events") && get)
        return api_events_list(srv, req, reply);
    if (!strcmp(p, "/v1/tokens") && post)
        return api_tokens_create(srv, req, reply);
    if (!strcmp(p, "/v1/tokens") && get)
        return api_tokens_list(srv, req, reply);
    if (!strcmp(p, "/v1/tokens:rotate") && post)
        return api_tokens_rotate(srv, req, reply);
    if (!strncmp(p, "/v1/tokens/", 11) && p[11] && !strcmp(m, "DELETE"))
        return api_tokens_revoke(srv, req, p + 11, reply);
    if (!strcmp(p, "/metrics") && get)
        return api_metrics(srv, req, reply);
    return api_error_msg(reply, TIDE_ENOENT, NULL, "no route for %s %s", m, p);
}

/* The connection's memo of its last token (NULL: none): asked for only
 * where a token is looked at, not for each piece of a body. */
static struct auth_memo *conn_auth_memo(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct http_conn *hc = ci ? ci->socket_context : NULL;
    return hc ? &hc->auth : NULL;
}

/* The answer to a request whose token could not pass when its headers
 * came (its body dropped unread): the token's refusal, or, should it pass
 * now (a limit ran out meanwhile), a plain one to send it again. */
static void refuse_unread(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    struct tide_err err;
    tide_err_clear(&err);
    if (auth_check(srv, req, &err) != 0) {
        api_error(reply, &err);
        return;
    }
    api_error_msg(reply, TIDE_EBUSY, NULL,
                  "the token was refused when the request began; send the request again");
}

/* leader: the X-Tide-Leader header's value, "" for none. */
static enum MHD_Result send_reply(struct MHD_Connection *conn, struct api_reply *reply,
                                  const char *leader)
{
    struct MHD_Response *resp = reply->response;
    if (!resp && reply->text) {
        resp = MHD_create_response_from_buffer(strlen(reply->text), reply->text,
                                               MHD_RESPMEM_MUST_FREE);
        reply->text = NULL;
        MHD_add_response_header(resp, "Content-Type",
                                reply->content_type ? reply->content_type : "text/plain; charset=utf-8");
    } else if (!resp) {
        size_t n = 0;
        char *body = reply->json ? json_write_compact(reply->json, true, &n) : NULL;
        if (!body) {
            body = strdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}\n");
            n = body ? strlen(body) : 0;
        }
        if (!body)
            return MHD_NO;
        resp = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
        if (!resp)
            free(body);
        else
            MHD_add_response_header(resp, "Content-Type", "application/json");
    }
    if (!resp)
        return MHD_NO;
    if (leader[0])
        MHD_add_response_header(resp, "X-Tide-Leader", leader);
    /* Replies carry tokens, job output and the cluster's state: never
     * sniffed as something else, never kept by a cache (the dashboard's
     * own files set theirs). */
    if (!MHD_get_response_header(resp, "X-Content-Type-Options"))
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (!MHD_get_response_header(resp, "Cache-Control"))
        MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (reply->close_connection)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result r = MHD_queue_response(conn, (unsigned)reply->status, resp);
    MHD_destroy_response(resp);
    json_decref(reply->json);
    free(reply->text);
    return r;
}

/* No answer tells of a commit that is not on disk yet: the hot path's
 * commits (heartbeats, scheduling passes, registrations) do
 * not wait for the disk (store_commit_deferred), so every answer waits for
 * one flush of all commits so far, shared with the answers waiting at the
 * same time; most find it done. A flush that failed fails for good (the
 * kernel may have dropped the pages it could not write): the server stops
 * rather than answer 500 for ever while agents fence their jobs; a restart
 * (Restart=always) recovers from what the database file holds. */
static void answer_only_what_is_on_disk(struct server *srv, struct api_reply *reply)
{
    (void)reply;
    struct tide_err err;
    tide_err_clear(&err);
    if (!srv->store || store_sync(srv->store, &err) == 0)
        return;
    log_error("%s: stopping at once; restart this server", err.message);
    fflush(NULL);
    _exit(3);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    const struct http_front *front = cls;
    struct server *srv = front->srv;
    struct upload *up = *con_cls;
    if (!up) {
        up = malloc(sizeof *up); /* not calloc: the inline buffer needs no clearing */
        if (!up)
            return MHD_NO;
        up->data = NULL;
        up->len = up->cap = 0;
        up->too_large = false;
        up->unwanted = false;
        up->arrived_s = metrics_now_s();
        *con_cls = up;
        http_guard_headers_done(conn);
        /* A proxy in front may frame such a request by its length where
         * this server reads it chunked: what follows on the connection could
         * be another client's request (RFC 9112, 6.1). */
        up->framing_ambiguous =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH) &&
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        up->body_ignored = !strcmp(method, "GET") || !strcmp(method, "HEAD");
        if (!up->body_ignored && !up->framing_ambiguous) {
            struct api_request early = {.method = method, .path = url, .conn = conn,
                                        .auth_memo = conn_auth_memo(conn)};
            up->unwanted = !auth_body_wanted(srv, &early);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (up->unwanted || up->body_ignored || up->framing_ambiguous)
            return MHD_YES; /* read and dropped: never held, whoever sends it */
        if (up->too_large || up->len + n > SERVER_MAX_BODY_BYTES) {
            /* Keep reading (and dropping) so the client gets a clean 413. */
            up->too_large = true;
            return MHD_YES;
        }
        if (!up->data && n + 1 <= sizeof up->inline_data) {
            up->data = up->inline_data;
            up->cap = sizeof up->inline_data;
        } else if (up->len + n + 1 > up->cap) {
            size_t cap = up->cap ? up->cap * 2 : 4096;
            while (cap < up->len + n + 1)
                cap *= 2;
            bool was_inline = up->data == up->inline_data;
            char *grown = realloc(was_inline ? NULL : up->data, cap);
            if (!grown)
                return MHD_NO;
            if (was_inline)
                memcpy(grown, up->data, up->len);
            up->data = grown;
            up->cap = cap;
        }
        memcpy(up->data + up->len, upload_data, n);
        up->len += n;
        up->data[up->len] = '\0';
        return MHD_YES;
    }

    struct api_reply reply = {.status = 200};
    struct api_request req = {.method = method, .path = url, .conn = conn,
                              .body = up->data ? up->data : "", .body_len = up->len,
                              .auth_memo = conn_auth_memo(conn)};
    /* Counted without the lock: /healthz must answer while a long request holds it. */
    __atomic_fetch_add(&srv->http_requests, 1, __ATOMIC_RELAXED);
    char leader[STORE_LEADER_URL_MAX];
    if (up->framing_ambiguous) {
        api_error_msg(&reply, TIDE_EINVAL, NULL,
                      "a request may have Content-Length or Transfer-Encoding, not both");
        reply.close_connection = true;
    } else if (lead_answer_unless_leader(&srv->lead, method, url, &reply, leader, sizeof leader))
        ; /* a follower serves nobody but says who does (docs/ha.md) */
    else if (up->too_large)
        api_error_msg(&reply, TIDE_ETOOBIG, NULL, "request body over %d bytes",
                      SERVER_MAX_BODY_BYTES);
    else if (up->unwanted)
        refuse_unread(srv, &req, &reply); /* its body was dropped: never routed */
    else
        route(srv, front->role, &req, &reply);
    if (strcmp(url, "/healthz")) /* tells of no commit, and must answer while the disk is slow */
        answer_only_what_is_on_disk(srv, &reply);
    if (reply.status == 201 && !strcmp(method, "POST") && !strcmp(url, "/v1/jobs"))
        metrics_observe_submit(&srv->metrics, metrics_now_s() - up->arrived_s);
    token_info_release(&req.token);
    return send_reply(conn, &reply, leader);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        http_guard_request_done(conn);
    struct upload *up = *con_cls;
    if (up) {
        if (up->data != up->inline_data)
            free(up->data);
        free(up);
        *con_cls = NULL;
    }
}

/* MHD_OPTION_NOTIFY_CONNECTION: counts every connection accepted, for
 * /metrics (tide_http_connections_total: clients that keep theirs open
 * make far fewer than requests), then the flood guards. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct server *srv = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        __atomic_fetch_add(&srv->http_connections, 1, __ATOMIC_RELAXED);
        *socket_context = calloc(1, sizeof(struct http_conn)); /* NULL: requests go without */
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct http_conn *hc = *socket_context;
        if (hc) /* the token it kept goes with it */
            explicit_bzero(hc, sizeof *hc);
        free(hc);
        *socket_context = NULL;
    }
    http_guard_notify(NULL, conn, socket_context, code);
}

/* libmicrohttpd's own messages (mostly failed TLS handshakes: a client that
 * does not trust our certificate, or speaks plain HTTP to HTTPS) as
 * timestamped warnings instead of bare lines on stderr. */
static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_warn("http: %s", line);
}

/* The connection budget of role's listener: all of it, or with an agent
 * listener HTTP_AGENT_SHARE_DIV-th of it for the agents and the rest for
 * the rest, so that a flood of the API leaves agents room. */
#define HTTP_AGENT_SHARE_DIV 4
static unsigned connection_limit(const struct server *srv, enum http_role role)
{
    unsigned total = http_guard_connection_limit();
    if (!srv->cfg.agent_listen)
        return total;
    unsigned agents = total / HTTP_AGENT_SHARE_DIV ? total / HTTP_AGENT_SHARE_DIV : 1;
    return role == HTTP_AGENT ? agents : total - agents;
}

int http_start(struct server *srv, enum http_role role, struct MHD_Daemon **out,
               struct tide_err *err)
{
    bool agent = role == HTTP_AGENT;
    const char *host = agent ? srv->cfg.agent_listen_host : srv->cfg.listen_host;
    int port = agent ? srv->cfg.agent_listen_port : srv->cfg.listen_port;
    const char *field = agent ? "agent_listen" : "listen";
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        return tide_err_set(err, TIDE_EINVAL, field, "%s address '%s' is not an IPv4 address",
                            field, host);
    struct http_tls tls;
    int rc = http_tls_load(&srv->cfg, &tls, err);
    if (rc)
        return rc;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;
    /* Unused options are MHD_OPTION_END pairs that stop the list early. */
    struct MHD_OptionItem tls_opts[] = {
        {tls.cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, tls.cert},
        {tls.key ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, tls.key},
        {tls.client_ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, tls.client_ca},
        {MHD_OPTION_END, 0, NULL},
    };
    if (tls.cert)
        flags |= MHD_USE_TLS;
    srv->fronts[role] = (struct http_front){.srv = srv, .role = role};
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)port, http_guard_accept, NULL, on_request, &srv->fronts[role],
        MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL, /* first, or MHD logs some itself */
        MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        /* slowloris: per-address caps, short header timeouts (http_guard.h) */
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_CONNECTION_LIMIT,
        connection_limit(srv, role), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)HTTP_GUARD_IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)HTTP_CONNECTION_MEMORY_BYTES,
        MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
    http_tls_release(&tls); /* the daemon has its own copies */
    /* No SO_REUSEPORT: a second server on the port must fail, not share it. */
    if (!d) {
        char holder[320];
        if (port && port_owner_describe(port, holder, sizeof holder) == 0)
            return tide_err_set(err, TIDE_ECONFLICT, field, "cannot listen on %s:%d: in use by %s",
                                host, port, holder);
        if (srv->cfg.tls_cert[0])
            return tide_err_set(err, TIDE_EINVAL, "tls_cert",
                                "cannot serve HTTPS on %s:%d: the port is in use, or %s and %s "
                                "are not a certificate and its matching key (see the log above)",
                                host, port, srv->cfg.tls_cert, srv->cfg.tls_key);
        return tide_err_set(err, TIDE_EIO, field, "cannot listen on %s:%d (in use?)", host, port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (!port && info) /* port 0: the one the kernel gave, for logs and error messages */
        *(agent ? &srv->cfg.agent_listen_port : &srv->cfg.listen_port) = info->port;
    *out = d;
    return 0;
}
