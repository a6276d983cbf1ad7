/*
 * The event log in the store (see store_events.h): appending inside the
 * caller's transaction, and filtered listing on the second (read-only)
 * connection. The table and its indexes are made by store_schema.c.
 */
#include "store/store_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "store/store_db.h"

static void bind_id(struct db_stmt *st, int i, int64_t id)
{
    if (id)
        db_bind_int64(st, i, id);
    else
        db_bind_null(st, i);
}

int store_event_add_in(struct store *s, int64_t now_ms, const char *kind, int64_t job_id,
                       int64_t node_id, const char *pool, const char *project, const char *message,
                       struct tide_err *err)
{
    /* Primary-key lookups in the open transaction: no extra commit or fsync.
     * Prepared once: a submission of thousands of jobs writes as many events. */
    struct db_stmt *st = store_cached(
        s, STORE_STMT_EVENT_ADD,
        "INSERT INTO events(time_ms, kind, job_id, node_id, message, node, pool, project)"
        " VALUES(?1, ?2, ?3, ?4, ?5, (SELECT name FROM nodes WHERE id = ?4),"
        " COALESCE(?6, (SELECT pool FROM pool_nodes WHERE node_id = ?4)),"
        " COALESCE(?7, (SELECT project FROM jobs WHERE id = ?3)))",
        err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, now_ms);
    db_bind_text(st, 2, kind);
    bind_id(st, 3, job_id);
    bind_id(st, 4, node_id);
    db_bind_text(st, 5, message);
    db_bind_text(st, 6, pool && *pool ? pool : NULL);
    db_bind_text(st, 7, project && *project ? project : NULL);
    int rc = db_step_done(st, "add event", err);
    db_reset(st);
    return rc;
}

#define EVENT_ADD_HEAD "INSERT INTO events(time_ms, kind, job_id, message, project) VALUES"
#define EVENT_ADD_ROW "?,?,?,?,?"

int store_events_add_many(struct store *s, int64_t now_ms, const char *kind,
                          const struct store_new_event *events, size_t n, struct tide_err *err)
{
    int rc = 0;
    for (size_t done = 0; !rc && done < n;) {
        int slot;
        size_t k = store_multirow_chunk(n - done, &slot);
        struct db_stmt *st = store_cached_multirow(
            s, (enum store_stmt_slot)(STORE_STMT_EVENT_ADD_MANY + slot), EVENT_ADD_HEAD,
            EVENT_ADD_ROW, k, err);
        rc = st ? 0 : err && err->code ? err->code : TIDE_EIO;
        for (size_t i = 0; !rc && i < k; i++) {
            const struct store_new_event *e = &events[done + i];
            int b = (int)i * 5;
            db_bind_int64(st, b + 1, now_ms);
            db_bind_text(st, b + 2, kind);
            bind_id(st, b + 3, e->job_id);
            db_bind_text(st, b + 4, e->message);
            db_bind_text(st, b + 5, e->project && *e->project ? e->project : NULL);
        }
        if (!rc)
            rc = db_step_done(st, "add events", err);
        db_reset(st);
        done += k;
    }
    return rc;
}

int store_event_add(struct store *s, int64_t now_ms, const char *kind, int64_t job_id,
                    int64_t node_id, const char *message, struct tide_err *err)
{
    return store_event_add_in(s, now_ms, kind, job_id, node_id, NULL, NULL, message, err);
}

/* The WHERE clause of a listing and its values, bound in order. */
struct query {
    char sql[2048];
    size_t len;
    int nbind;
    struct {
        const char *text; /* NULL: int64 */
        size_t text_len;
        int64_t n;
    } binds[EVENT_KINDS_MAX * 2 + 16];
    bool overflow;
};

static void add_sql(struct query *q, const char *sql)
{
    size_t n = strlen(sql);
    if (q->len + n >= sizeof q->sql) {
        q->overflow = true;
        return;
    }
    memcpy(q->sql + q->len, sql, n + 1);
    q->len += n;
}

static void add_int(struct query *q, int64_t v)
{
    if (q->nbind >= (int)(sizeof q->binds / sizeof q->binds[0])) {
        q->overflow = true;
        return;
    }
    q->binds[q->nbind].text = NULL;
    q->binds[q->nbind++].n = v;
}

static void add_text(struct query *q, const char *v, size_t len)
{
    if (q->nbind >= (int)(sizeof q->binds / sizeof q->binds[0])) {
        q->overflow = true;
        return;
    }
    q->binds[q->nbind].text = v;
    q->binds[q->nbind++].text_len = len;
}

/* "kind = ?" or, for "job_*", "substr(kind, 1, 4) = ?" for each pattern. */
static void add_kinds(struct query *q, const struct event_filter *f)
{
    if (!f->nkinds)
        return;
    add_sql(q, " AND (");
    for (int i = 0; i < f->nkinds; i++) {
        const char *k = f->kinds[i];
        size_t n = strlen(k);
        if (i)
            add_sql(q, " OR ");
        if (n && k[n - 1] == '*') {
            add_sql(q, "substr(kind, 1, CAST(? AS INTEGER)) = ?");
            add_int(q, (int64_t)(n - 1));
            add_text(q, k, n - 1);
        } else {
            add_sql(q, "kind = ?");
            add_text(q, k, n);
        }
    }
    add_sql(q, ")");
}

static void build_where(struct query *q, const struct event_filter *f, enum db_dialect dialect,
                        char **projects_json)
{
    add_sql(q, " WHERE id > ?");
    add_int(q, f->since_id);
    if (f->job_id) {
        add_sql(q, " AND job_id = ?");
        add_int(q, f->job_id);
    }
    const char *cols[] = {" AND node = ?", " AND pool = ?", " AND project = ?"};
    const char *vals[] = {f->node, f->pool, f->project};
    for (int i = 0; i < 3; i++)
        if (vals[i]) {
            add_sql(q, cols[i]);
            add_text(q, vals[i], strlen(vals[i]));
        }
    add_kinds(q, f);
    if (f->from_ms) {
        add_sql(q, " AND time_ms >= ?");
        add_int(q, f->from_ms);
    }
    if (f->to_ms) {
        add_sql(q, " AND time_ms < ?");
        add_int(q, f->to_ms);
    }
    if (f->projects) {
        /* A project-limited token sees its projects' events only. */
        *projects_json = json_dumps(f->projects, JSON_COMPACT);
        if (!*projects_json) {
            q->overflow = true;
            return;
        }
        add_sql(q, dialect == DB_SQLITE
                       ? " AND project IN (SELECT value FROM json_each(?))"
                       : " AND project IN (SELECT json_array_elements_text(CAST(? AS json)))");
        add_text(q, *projects_json, strlen(*projects_json));
    }
}

static json_t *text_or_null(struct db_stmt *st, int i)
{
    if (db_column_is_null(st, i))
        return json_null();
    return json_string(db_column_text(st, i));
}

static json_t *event_json(struct db_stmt *st)
{
    return json_pack(
        "{s:I, s:f, s:s, s:o, s:o, s:o, s:o, s:o}", "id", (json_int_t)db_column_int64(st, 0),
        "time", (double)db_column_int64(st, 1) / 1000.0, "kind", db_column_text(st, 2), "job_id",
        db_column_is_null(st, 3) ? json_null() : json_integer(db_column_int64(st, 3)), "node",
        text_or_null(st, 4), "pool", text_or_null(st, 5), "project", text_or_null(st, 6), "message",
        utf8_json_string(db_column_text(st, 7))); /* a row written before text was checked */
}

/* Reverses a in place (the tail is read newest first). */
static void reverse(json_t *a)
{
    size_t n = json_array_size(a);
    for (size_t i = 0; i < n / 2; i++) {
        json_t *x = json_incref(json_array_get(a, i));
        json_array_set(a, i, json_array_get(a, n - 1 - i));
        json_array_set_new(a, n - 1 - i, x);
    }
}

int store_events_query(struct store *s, const struct event_filter *f, json_t **events, bool *more,
                       struct tide_err *err)
{
    *events = NULL;
    *more = false;
    int n = f->tail > 0 ? f->tail : f->limit > 0 ? f->limit : 1000;
    struct query *q = calloc(1, sizeof *q);
    if (!q)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    char *projects_json = NULL;
    add_sql(q, "SELECT id, time_ms, kind, job_id, node, pool, project, message FROM events");
    struct db *db = store_reader(s);
    build_where(q, f, db_dialect(db), &projects_json);
    add_sql(q, f->tail > 0 ? " ORDER BY id DESC LIMIT ?" : " ORDER BY id LIMIT ?");
    add_int(q, (int64_t)n + 1); /* one more tells whether there is more */
    struct db_stmt *st = NULL;
    int rc = 0;
    if (q->overflow)
        rc = tide_err_set(err, TIDE_EINVAL, NULL, "event filter too long");
    else if ((rc = db_reconnect(db, err)) != 0) /* the reader holds no lock: reopen freely */
        ;
    else if (!(st = db_prepare(db, q->sql, err)))
        rc = TIDE_EIO;
    for (int i = 0; !rc && i < q->nbind; i++) {
        if (q->binds[i].text) {
            char *text = strndup(q->binds[i].text, q->binds[i].text_len);
            if (!text)
                rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
            db_bind_text(st, i + 1, text);
            free(text);
        } else {
            db_bind_int64(st, i + 1, q->binds[i].n);
        }
    }
    json_t *out = rc ? NULL : json_array();
    int r = DB_DONE, got = 0;
    while (!rc && (r = db_step(st, "list events", err)) == DB_ROW) {
        if (got == n) {
            *more = true;
            break;
        }
        json_t *e = event_json(st);
        if (!e || json_array_append_new(out, e) != 0) {
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
            break;
        }
        got++;
    }
    if (!rc && r < 0)
        rc = r;
    db_finalize(st);
    free(projects_json);
    free(q);
    if (rc) {
        json_decref(out);
        return rc;
    }
    if (f->tail > 0)
        reverse(out);
    *events = out;
    return 0;
}
