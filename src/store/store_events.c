/*
 * The event log in the SQLite store (see store_events.h): the table and its
 * migration, appending inside the caller's transaction, and filtered
 * listing on the read-only connection.
 */
#include "store/store_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_pools.h"

static const char events_table[] =
    "CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL,"
    "  kind TEXT NOT NULL, job_id INTEGER, node_id INTEGER, message TEXT NOT NULL,"
    "  node TEXT, pool TEXT, project TEXT)";

/* Index entries end with the rowid, so `col = ? AND id > ? ORDER BY id`
 * walks one index range in order. */
static const char events_indexes[] =
    "CREATE INDEX IF NOT EXISTS events_by_job ON events(job_id);"
    "CREATE INDEX IF NOT EXISTS events_by_node ON events(node);"
    "CREATE INDEX IF NOT EXISTS events_by_pool ON events(pool);"
    "CREATE INDEX IF NOT EXISTS events_by_project ON events(project);"
    "CREATE INDEX IF NOT EXISTS events_by_time ON events(time_ms);";

/* Tables made before events carried their node, pool and project: add the
 * columns and fill them from the rows they name. */
static const char events_upgrade[] =
    "BEGIN IMMEDIATE;"
    "ALTER TABLE events ADD COLUMN node TEXT;"
    "ALTER TABLE events ADD COLUMN pool TEXT;"
    "ALTER TABLE events ADD COLUMN project TEXT;"
    "UPDATE events SET node = (SELECT name FROM nodes WHERE id = events.node_id),"
    "  pool = (SELECT pool FROM pool_nodes WHERE node_id = events.node_id),"
    "  project = (SELECT project FROM jobs WHERE id = events.job_id);"
    "COMMIT;";

/* 1 when the events table has a column called name, 0 when not, <0 on error. */
static int has_column(struct store *s, const char *name, struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s), "SELECT 1 FROM pragma_table_info('events') WHERE name = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return store_sqlite_fail(s, err, "prepare events columns");
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r == SQLITE_ROW)
        return 1;
    return r == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "read events columns");
}

int store_events_init(struct store *s, struct tide_err *err)
{
    int rc = store_sqlite_exec(s, events_table, err);
    int has = rc ? rc : has_column(s, "project", err);
    if (has < 0)
        return has;
    if (!has && (rc = store_sqlite_exec(s, events_upgrade, err)) != 0) {
        store_rollback(s);
        return rc;
    }
    return store_sqlite_exec(s, events_indexes, err);
}

static void bind_id(sqlite3_stmt *st, int i, int64_t id)
{
    if (id)
        sqlite3_bind_int64(st, i, id);
    else
        sqlite3_bind_null(st, i);
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

int store_event_add_in(struct store *s, int64_t now_ms, const char *kind, int64_t job_id,
                       int64_t node_id, const char *pool, const char *project,
                       const char *message, struct tide_err *err)
{
    /* Primary-key lookups in the open transaction: no extra commit or fsync.
     * Prepared once: a submission of thousands of jobs writes as many events. */
    sqlite3_stmt *st = store_sqlite_cached(s, STORE_STMT_EVENT_ADD,
            "INSERT INTO events(time_ms, kind, job_id, node_id, message, node, pool, project)"
            " VALUES(?1, ?2, ?3, ?4, ?5, (SELECT name FROM nodes WHERE id = ?4),"
            " COALESCE(?6, (SELECT pool FROM pool_nodes WHERE node_id = ?4)),"
            " COALESCE(?7, (SELECT project FROM jobs WHERE id = ?3)))", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int64(st, 1, now_ms);
    sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    bind_id(st, 3, job_id);
    bind_id(st, 4, node_id);
    sqlite3_bind_text(st, 5, message, -1, SQLITE_STATIC);
    bind_text(st, 6, pool && *pool ? pool : NULL);
    bind_text(st, 7, project && *project ? project : NULL);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : store_sqlite_fail(s, err, "add event");
    sqlite3_reset(st);
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
            add_sql(q, "substr(kind, 1, ?) = ?");
            add_int(q, (int64_t)(n - 1));
            add_text(q, k, n - 1);
        } else {
            add_sql(q, "kind = ?");
            add_text(q, k, n);
        }
    }
    add_sql(q, ")");
}

static void build_where(struct query *q, const struct event_filter *f, char **projects_json)
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
        add_sql(q, " AND project IN (SELECT value FROM json_each(?))");
        add_text(q, *projects_json, strlen(*projects_json));
    }
}

static json_t *text_or_null(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return json_null();
    return json_string((const char *)sqlite3_column_text(st, i));
}

static json_t *event_json(sqlite3_stmt *st)
{
    return json_pack("{s:I, s:f, s:s, s:o, s:o, s:o, s:o, s:s}",
                     "id", (json_int_t)sqlite3_column_int64(st, 0),
                     "time", (double)sqlite3_column_int64(st, 1) / 1000.0,
                     "kind", (const char *)sqlite3_column_text(st, 2),
                     "job_id", sqlite3_column_type(st, 3) == SQLITE_NULL
                                   ? json_null() : json_integer(sqlite3_column_int64(st, 3)),
                     "node", text_or_null(st, 4), "pool", text_or_null(st, 5),
                     "project", text_or_null(st, 6),
                     "message", (const char *)sqlite3_column_text(st, 7));
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

int store_events_query(struct store *s, const struct event_filter *f, json_t **events,
                       bool *more, struct tide_err *err)
{
    *events = NULL;
    *more = false;
    int n = f->tail > 0 ? f->tail : f->limit > 0 ? f->limit : 1000;
    struct query *q = calloc(1, sizeof *q);
    if (!q)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    char *projects_json = NULL;
    add_sql(q, "SELECT id, time_ms, kind, job_id, node, pool, project, message FROM events");
    build_where(q, f, &projects_json);
    add_sql(q, f->tail > 0 ? " ORDER BY id DESC LIMIT ?" : " ORDER BY id LIMIT ?");
    add_int(q, (int64_t)n + 1); /* one more tells whether there is more */
    sqlite3 *db = store_sqlite_reader(s);
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (q->overflow)
        rc = tide_err_set(err, TIDE_EINVAL, NULL, "event filter too long");
    else if (sqlite3_prepare_v2(db, q->sql, -1, &st, NULL) != SQLITE_OK)
        rc = tide_err_set(err, TIDE_EIO, NULL, "database: prepare events: %s", sqlite3_errmsg(db));
    for (int i = 0; !rc && i < q->nbind; i++) {
        if (q->binds[i].text)
            sqlite3_bind_text(st, i + 1, q->binds[i].text, (int)q->binds[i].text_len, SQLITE_STATIC);
        else
            sqlite3_bind_int64(st, i + 1, q->binds[i].n);
    }
    json_t *out = rc ? NULL : json_array();
    int r = SQLITE_DONE, got = 0;
    while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
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
    if (!rc && r != SQLITE_DONE && r != SQLITE_ROW)
        rc = tide_err_set(err, TIDE_EIO, NULL, "database: list events: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
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
