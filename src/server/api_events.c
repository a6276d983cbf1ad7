/*
 * GET /v1/events: the event log, filtered by job, node, pool, project,
 * kind and time, from a cursor or the newest N. Read on the store's
 * read-only connection, without the server's lock, so a long listing never
 * holds up the scheduler.
 */
#include "server/event_params.h"
#include "server/server.h"

int api_events_list(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    const char *unknown = api_query_unknown(req, event_params_names);
    if (unknown)
        return api_error_msg(reply, TIDE_EINVAL, unknown,
                             "%.64s: unknown parameter (known: since, job, node, pool, project, kind,"
                             " from, to, tail, limit)", unknown);
    struct event_filter f;
    struct event_kinds_buf kb;
    struct tide_err err;
    tide_err_clear(&err);
    if (event_params_parse(api_query_get, req, &f, &kb, &err) != 0)
        return api_error(reply, &err);
    if (req->token.kind != TOKEN_ADMIN) {
        if (f.project && !auth_project_allowed(req, f.project))
            return api_error_msg(reply, TIDE_EPERM, "project",
                                 "project: this token may not see project %.64s", f.project);
        f.projects = req->token.projects;
    }
    json_t *events;
    bool more;
    if (store_events_query(srv->store, &f, &events, &more, &err) != 0)
        return api_error(reply, &err);
    reply->json = json_pack("{s:o, s:b}", "events", events, "more", more);
    return 0;
}
