/*
 * Bearer tokens: issuing them, checking a request's token against the
 * store (by SHA-256; recent admin and user tokens from auth_cache.h) unless
 * its address is limited and the token unknown (auth_limit.h,
 * auth_known.h), refusing used-up node-bound join tokens (and the shared
 * one when it is turned off) and rotated-out ones, and project scoping of
 * user tokens. The admin and join tokens' files are auth_files.c's.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/fsutil.h"
#include "common/sha256.h"
#include "server/server.h"

int auth_issue(struct server *srv, enum token_kind kind, const char *name, json_t *projects,
               int64_t node_id, char out[65], struct tide_err *err)
{
    if (fs_random_hex(out, 32) != 0)
        return tide_err_set(err, TIDE_EIO, NULL, "no randomness for a token");
    char hash[65];
    sha256_hex(out, strlen(out), hash);
    int rc = store_token_put(srv->store, hash, kind, name, projects, node_id, clock_now_ms(), err);
    auth_cache_invalidate(&srv->auth_cache);
    return rc;
}

/* The SHA-256 (hex) of the request's bearer token, or TIDE_EAUTH when it
 * has none that could be one. */
static int bearer_hash(struct api_request *req, char hash[65], struct tide_err *err)
{
    const char *header =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!header)
        return tide_err_set(err, TIDE_EAUTH, NULL, "missing 'Authorization: Bearer <token>' header");
    if (strncasecmp(header, "Bearer ", 7) != 0)
        return tide_err_set(err, TIDE_EAUTH, NULL, "the Authorization header must be 'Bearer <token>'");
    const char *token = header + 7;
    while (*token == ' ')
        token++;
    size_t n = strlen(token);
    if (n == 0 || n > 256)
        return tide_err_set(err, TIDE_EAUTH, NULL, "invalid token");
    auth_memo_hash(req->auth_memo, token, n, hash);
    return 0;
}

/* The token of hash as stored (a recent one from the cache) into out,
 * refused when unknown, rotated out or expired. */
static int token_lookup(struct server *srv, const char hash[65], int64_t now,
                        struct token_info *out, struct tide_err *err)
{
    uint64_t generation;
    int rc = 0;
    if (!auth_cache_get(&srv->auth_cache, hash, now, out, &generation)) {
        pthread_mutex_lock(&srv->lock);
        rc = store_token_get(srv->store, hash, out, err);
        pthread_mutex_unlock(&srv->lock);
        if (!rc)
            auth_cache_put(&srv->auth_cache, hash, out, generation, now);
    }
    if (rc == TIDE_ENOENT)
        return tide_err_set(err, TIDE_EAUTH, NULL, "invalid token");
    if (rc)
        return rc;
    if (out->kind == TOKEN_ROTATED)
        rc = tide_err_set(err, TIDE_EAUTH, NULL,
                          "this %s token was rotated out (tide token rotate %s); use the new "
                          "one in the data directory's %s.token of the server that rotated it",
                          out->name, out->name, out->name);
    else if (out->expires_ms && out->expires_ms <= now)
        rc = tide_err_set(err, TIDE_EAUTH, NULL, "token '%s' expired", out->name);
    if (rc)
        token_info_release(out);
    return rc;
}

/* The check of the token of hash, without the rate limit around it. */
static int check_token(struct server *srv, struct api_request *req, const char hash[65],
                       int64_t now, struct tide_err *err)
{
    int rc = token_lookup(srv, hash, now, &req->token, err);
    if (rc)
        return rc;
    memcpy(req->token_hash, hash, sizeof req->token_hash);
    if (req->token.kind == TOKEN_JOIN_USED && strcmp(req->path, "/v1/agent/register") != 0)
        rc = auth_join_used_error(req, err);
    else if (req->token.kind == TOKEN_JOIN && srv->cfg.shared_join_token_off)
        rc = tide_err_set(err, TIDE_EAUTH, NULL,
                          "the shared join token is turned off on this server "
                          "(server.shared_join_token: false); register with a join token bound "
                          "to this node (tide token create --join --node NAME)");
    if (rc)
        token_info_release(&req->token);
    return rc;
}

bool auth_still_passes(struct server *srv, const char hash[65])
{
    struct token_info info;
    struct tide_err err;
    int rc = token_lookup(srv, hash, clock_now_ms(), &info, &err);
    if (!rc)
        token_info_release(&info);
    return rc != TIDE_EAUTH; /* a store that cannot answer now ends no stream */
}

bool auth_body_wanted(struct server *srv, struct api_request *req)
{
    char hash[65];
    struct tide_err err;
    if (bearer_hash(req, hash, &err) != 0)
        return false;
    if (auth_known_has(&srv->auth_known, hash))
        return true;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    int64_t now = clock_now_ms();
    if (auth_limit_wait_ms(&srv->auth_limit, info ? info->client_addr : NULL, now) > 0)
        return false; /* refused unread anyway */
    int rc = check_token(srv, req, hash, now, &err);
    if (rc)
        return rc != TIDE_EAUTH; /* a store that cannot answer: the request says so */
    token_info_release(&req->token);
    auth_known_add(&srv->auth_known, hash, now);
    return true;
}

int auth_join_used_error(const struct api_request *req, struct tide_err *err)
{
    return tide_err_set(err, TIDE_EAUTH, NULL,
                        "this join token already registered node '%s' and cannot be used "
                        "again; make a new one (tide token create --join --node %s)",
                        req->token.name, req->token.name);
}

int auth_check(struct server *srv, struct api_request *req, struct tide_err *err)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *from = info ? info->client_addr : NULL;
    int64_t now = clock_now_ms();
    char hash[65] = "";
    int rc = bearer_hash(req, hash, err);
    /* A limited address is refused without a look at its token, unless
     * this server has seen the token pass: then it is a node's or a
     * user's from behind the same address as the guesses, not a guess. */
    int64_t wait = auth_limit_wait_ms(&srv->auth_limit, from, now);
    if (wait > 0 && (rc || !auth_known_has(&srv->auth_known, hash)))
        return tide_err_set(err, TIDE_EBUSY, NULL,
                            "too many failed authentications from this address; retry in %lld s",
                            (long long)(wait + 999) / 1000);
    if (!rc)
        rc = check_token(srv, req, hash, now, err);
    if (!rc)
        auth_known_add(&srv->auth_known, hash, now);
    if (rc == TIDE_EAUTH) {
        auth_limit_failed(&srv->auth_limit, from, now);
        if (hash[0])
            auth_known_forget(&srv->auth_known, hash);
    }
    return rc;
}

bool auth_project_allowed(const struct api_request *req, const char *project)
{
    if (req->token.kind == TOKEN_ADMIN)
        return true;
    if (req->token.kind != TOKEN_USER)
        return false;
    if (!req->token.projects)
        return true;
    size_t i;
    json_t *p;
    json_array_foreach(req->token.projects, i, p) if (!strcmp(json_string_value(p), project)) return true;
    return false;
}
