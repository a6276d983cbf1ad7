/*
 * GET /v1/usage?by=project,pool,queue,day,user&from=YYYY-MM-DD&to=YYYY-MM-DD&project=P
 * GPU-hours and cost from the usage ledger (core/usage_ledger.h: pool nodes
 * and, as pool "(static)", nodes joined by hand; server/usage_meter.h),
 * grouped as asked (default by project), days in UTC, from and to
 * inclusive (default: all days). A token limited to some projects sees
 * only their rows, grouped by project; idle cost and capacity are the
 * pools' and shown to the others only.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/pool_loop_state.h"
#include "server/usage_meter.h"
#include "server/usage_params.h"

#define MS_PER_HOUR 3600000.0

static void day_name(int64_t day, char *buf, size_t size)
{
    time_t t = (time_t)(day * 86400);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%d", &tm);
}

static void set_keys(json_t *o, const struct server *srv, int pool, int64_t day)
{
    char name[16];
    if (pool >= 0 && srv->usage && pool < srv->usage->npools)
        json_object_set_new(o, "pool", json_string(srv->usage->pools[pool].name));
    if (day >= 0) {
        day_name(day, name, sizeof name);
        json_object_set_new(o, "day", json_string(name));
    }
}

static void set_money(json_t *o, const char *key, int64_t micros)
{
    char buf[40], micros_key[48];
    pool_money(buf, sizeof buf, micros);
    snprintf(micros_key, sizeof micros_key, "%s_micros", key);
    json_object_set_new(o, micros_key, json_integer(micros));
    json_object_set_new(o, key, json_string(buf));
}

static json_t *capacity_json(const struct server *srv, const struct usage_capacity *c)
{
    json_t *o = json_object();
    set_keys(o, srv, c->pool, c->day);
    json_object_set_new(o, "provisioned_gpu_hours", json_real((double)c->provisioned_gpu_ms / MS_PER_HOUR));
    json_object_set_new(o, "used_gpu_hours", json_real((double)c->used_gpu_ms / MS_PER_HOUR));
    json_object_set_new(o, "utilisation", c->provisioned_gpu_ms > 0
                                              ? json_real((double)c->used_gpu_ms / (double)c->provisioned_gpu_ms)
                                              : json_null());
    set_money(o, "cost", c->cost_micros);
    set_money(o, "idle_cost", c->idle_cost_micros);
    return o;
}

static json_t *row_json(const struct server *srv, unsigned group, const struct usage_row *r)
{
    json_t *o = json_object();
    if (group & USAGE_BY_PROJECT)
        json_object_set_new(o, "project", json_string(r->idle ? "(idle)" : r->project));
    if (group & USAGE_BY_QUEUE)
        json_object_set_new(o, "queue", json_string(r->idle ? "(idle)" : r->queue));
    if (group & USAGE_BY_USER)
        json_object_set_new(o, "user", json_string(r->idle ? "(idle)" : r->user[0] ? r->user : "(unknown)"));
    set_keys(o, srv, r->pool, r->day);
    json_object_set_new(o, "idle", json_boolean(r->idle));
    json_object_set_new(o, "gpu_hours", json_real((double)r->gpu_ms / MS_PER_HOUR));
    set_money(o, "cost", r->cost_micros);
    return o;
}

int api_usage_get(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    const char *unknown = api_query_unknown(req, usage_params_names);
    if (unknown)
        return api_error_msg(reply, TIDE_EINVAL, unknown,
                             "%.64s: unknown parameter (known: by, from, to, project)", unknown);
    struct usage_params q;
    struct tide_err err;
    tide_err_clear(&err);
    if (usage_params_parse(api_query_get, req, &q, &err) != 0)
        return api_error(reply, &err);
    const char *from = q.from, *to = q.to, *project = q.project;
    int group = q.group;
    int64_t from_day = q.from_day, to_day = q.to_day;
    if (project && !auth_project_allowed(req, project))
        return api_error_msg(reply, TIDE_EPERM, "project", "this token may not see project %s", project);
    bool scoped = req->token.kind != TOKEN_ADMIN && req->token.projects;
    if (scoped)
        group |= USAGE_BY_PROJECT;

    json_t *rows = json_array(), *capacity = json_array(), *total = NULL;
    int rc = 0;
    pthread_mutex_lock(&srv->lock);
    struct usage_meter *m = srv->usage;
    struct usage_report r;
    memset(&r, 0, sizeof r);
    if (m)
        rc = usage_ledger_report(&m->ledger, m->pools, m->npools, (unsigned)group, from_day,
                                 to_day, project, &r);
    for (size_t i = 0; !rc && i < r.nrows; i++) {
        const struct usage_row *row = &r.rows[i];
        /* Rows of a scoped token are grouped by project (above). */
        if ((project || scoped) && row->idle)
            continue;
        if (scoped && !auth_project_allowed(req, row->project))
            continue;
        json_array_append_new(rows, row_json(srv, (unsigned)group, row));
    }
    if (!rc && !scoped) {
        for (size_t i = 0; i < r.ncapacity; i++)
            json_array_append_new(capacity, capacity_json(srv, &r.capacity[i]));
        total = capacity_json(srv, &r.total);
    }
    usage_report_release(&r);
    pthread_mutex_unlock(&srv->lock);
    if (rc) {
        json_decref(rows);
        json_decref(capacity);
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    }
    static const char *const names[] = {"project", "pool", "queue", "day", "user"};
    json_t *keys = json_array();
    for (int k = 0; k < 5; k++)
        if (group & (1 << k))
            json_array_append_new(keys, json_string(names[k]));
    reply->json = json_pack("{s:o, s:s?, s:s?, s:o, s:o, s:o}", "by", keys, "from", from, "to", to,
                            "rows", rows, "capacity", capacity, "total", total ? total : json_null());
    return 0;
}
