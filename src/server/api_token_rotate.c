/*
 * POST /v1/tokens:rotate {"kind": "admin"|"join"}: replaces the admin
 * token or the shared join token (auth_files.c), for when one has leaked.
 * Every earlier token of that kind stops working at once (other HA servers
 * notice within their token cache's second); the answer carries the new
 * one, which this server also writes to its DATA file. Node tokens, user,
 * metrics and node-bound join tokens are not touched: registered agents
 * keep running, and the others are revoked by name.
 */
#include <string.h>

#include "server/server.h"

int api_tokens_rotate(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    if (req->token.kind != TOKEN_ADMIN)
        return api_error_msg(reply, TIDE_EPERM, NULL, "only the admin token can rotate tokens");
    static const char *const fields[] = {"kind", NULL};
    json_t *body = api_body_object(req, fields, reply);
    if (!body)
        return 0;
    const char *kind = json_string_value(json_object_get(body, "kind"));
    bool admin = kind && !strcmp(kind, "admin");
    if (!admin && !(kind && !strcmp(kind, "join"))) {
        json_decref(body);
        return api_error_msg(reply, TIDE_EINVAL, "kind",
                             "kind: must be \"admin\" (the admin token) or \"join\" (the shared "
                             "join token)");
    }
    json_decref(body);
    char token[65];
    int rotated = 0;
    struct tide_err err, file_err;
    pthread_mutex_lock(&srv->lock); /* one rotation at a time: the file holds the last one */
    int rc = auth_rotate(srv, admin ? TOKEN_ADMIN : TOKEN_JOIN, token, &rotated, &file_err, &err);
    pthread_mutex_unlock(&srv->lock);
    if (rc)
        return api_error(reply, &err);
    reply->status = 201;
    reply->json =
        json_pack("{s:s, s:s, s:i, s:s*}", "token", token, "kind", admin ? "admin" : "join",
                  "rotated", rotated, "file_error", file_err.code ? file_err.message : NULL);
    return 0;
}
