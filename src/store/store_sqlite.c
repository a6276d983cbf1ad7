/*
 * The SQLite store: one database file in WAL mode with synchronous=FULL, so
 * a commit survives a crash of the process and of the machine. One
 * connection for writes and reads, used under the server's lock, and a
 * second read-only one for listings that need no lock (WAL lets it read
 * committed data while the first one writes).
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/job_spec.h"
#include "store/store.h"
#include "store/store_pools.h"

struct store {
    sqlite3 *db;
    sqlite3 *reader; /* read-only, serialized by SQLite itself (FULLMUTEX) */
    sqlite3_stmt *cached[STORE_STMT_COUNT]; /* on db, prepared once */
};

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS tokens(hash TEXT PRIMARY KEY, kind INTEGER NOT NULL,"
    "  name TEXT NOT NULL, projects TEXT, node_id INTEGER, created_ms INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS nodes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    "  state TEXT NOT NULL, info TEXT NOT NULL, registered_ms INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    "  project TEXT NOT NULL, queue TEXT NOT NULL, priority INTEGER NOT NULL,"
    "  state TEXT NOT NULL, reason TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,"
    "  spec TEXT NOT NULL, owner TEXT NOT NULL, node_id INTEGER, gpus TEXT,"
    "  exit_code INTEGER, signal INTEGER, cancel_requested INTEGER NOT NULL DEFAULT 0,"
    "  parts TEXT,"
    "  submit_ms INTEGER NOT NULL, start_ms INTEGER, end_ms INTEGER);"
    "CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state);"
    "CREATE INDEX IF NOT EXISTS jobs_by_project ON jobs(project);";

static int db_error(struct store *s, struct tide_err *err, const char *what)
{
    return tide_err_set(err, TIDE_EIO, NULL, "database: %s: %s", what, sqlite3_errmsg(s->db));
}

int store_sqlite_fail(struct store *s, struct tide_err *err, const char *what)
{
    return db_error(s, err, what);
}

int store_sqlite_exec(struct store *s, const char *sql, struct tide_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = tide_err_set(err, TIDE_EIO, NULL, "database: %s", msg ? msg : "error");
        sqlite3_free(msg);
        return rc;
    }
    return 0;
}

/* The database holds tokens' hashes and jobs' env secrets: only the server's
 * user may read it. SQLite gives its -wal and -shm files the database's mode,
 * so creating it 0600 covers them; older databases are tightened too. */
static int restrict_db_files(const char *path, struct tide_err *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, 0600) != 0) {
        int rc = tide_err_set(err, TIDE_EIO, NULL, "cannot open database %s: %s", path,
                              strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    close(fd);
    static const char *const companions[] = {"-wal", "-shm"};
    for (size_t i = 0; i < sizeof companions / sizeof companions[0]; i++) {
        char other[4096];
        if ((size_t)snprintf(other, sizeof other, "%s%s", path, companions[i]) < sizeof other &&
            chmod(other, 0600) != 0 && errno != ENOENT)
            return tide_err_set(err, TIDE_EIO, NULL, "cannot restrict %s: %s", other, strerror(errno));
    }
    return 0;
}

int store_open_sqlite(const char *path, struct store **out, struct tide_err *err)
{
    *out = NULL;
    if (strcmp(path, ":memory:") != 0) {
        int rc = restrict_db_files(path, err);
        if (rc)
            return rc;
    }
    struct store *s = calloc(1, sizeof *s);
    if (!s)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        int rc = tide_err_set(err, TIDE_EIO, NULL, "cannot open database %s: %s", path,
                              s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sqlite3_close(s->db);
        free(s);
        return rc;
    }
    sqlite3_busy_timeout(s->db, 5000);
    int rc = store_sqlite_exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
                      err);
    if (!rc)
        rc = store_sqlite_exec(s, schema, err);
    if (!rc) {
        /* Databases made before gang jobs lack the column; adding it twice fails harmlessly. */
        sqlite3_exec(s->db, "ALTER TABLE jobs ADD COLUMN parts TEXT", NULL, NULL, NULL);
        /* Operator holds and drains (core/operator.h): NULL when none. */
        sqlite3_exec(s->db, "ALTER TABLE jobs ADD COLUMN hold_reason TEXT", NULL, NULL, NULL);
        sqlite3_exec(s->db, "ALTER TABLE nodes ADD COLUMN drain_reason TEXT", NULL, NULL, NULL);
        /* Attempts ended by no fault of the job, which use no retry (store.h). */
        sqlite3_exec(s->db, "ALTER TABLE jobs ADD COLUMN free_attempts INTEGER NOT NULL DEFAULT 0",
                     NULL, NULL, NULL);
    }
    /* Opened after the writer made the file and switched it to WAL. */
    if (!rc && sqlite3_open_v2(path, &s->reader, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX,
                               NULL) != SQLITE_OK)
        rc = tide_err_set(err, TIDE_EIO, NULL, "cannot open database %s for reading: %s", path,
                          s->reader ? sqlite3_errmsg(s->reader) : "out of memory");
    if (!rc)
        sqlite3_busy_timeout(s->reader, 5000);
    if (rc) {
        store_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

sqlite3 *store_sqlite_db(struct store *s)
{
    return s->db;
}

sqlite3 *store_sqlite_reader(struct store *s)
{
    return s->reader;
}

sqlite3_stmt *store_sqlite_cached(struct store *s, enum store_stmt_slot slot, const char *sql,
                                  struct tide_err *err)
{
    sqlite3_stmt *st = s->cached[slot];
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return st;
    }
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        db_error(s, err, "prepare");
        sqlite3_finalize(st);
        return NULL;
    }
    s->cached[slot] = st;
    return st;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    for (int i = 0; i < STORE_STMT_COUNT; i++)
        sqlite3_finalize(s->cached[i]);
    sqlite3_close(s->reader);
    sqlite3_close(s->db);
    free(s);
}

int store_begin(struct store *s, struct tide_err *err)
{
    return store_sqlite_exec(s, "BEGIN IMMEDIATE", err);
}

int store_commit(struct store *s, struct tide_err *err)
{
    return store_sqlite_exec(s, "COMMIT", err);
}

void store_rollback(struct store *s)
{
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Prepares sql; on failure fills err. The caller finalizes. */
static sqlite3_stmt *prepare(struct store *s, const char *sql, struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_error(s, err, "prepare");
        return NULL;
    }
    return st;
}

/* Steps a statement that returns no rows and finalizes it. */
static int step_done(struct store *s, sqlite3_stmt *st, struct tide_err *err, const char *what)
{
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, err, what);
    sqlite3_finalize(st);
    return rc;
}

static void bind_json(sqlite3_stmt *st, int i, json_t *v)
{
    if (!v) {
        sqlite3_bind_null(st, i);
        return;
    }
    char *text = json_dumps(v, JSON_COMPACT);
    if (text)
        sqlite3_bind_text(st, i, text, -1, free);
    else
        sqlite3_bind_null(st, i);
}

static json_t *column_json(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NULL;
    return json_loads((const char *)sqlite3_column_text(st, i), 0, NULL);
}

int store_token_put(struct store *s, const char *hash, enum token_kind kind, const char *name,
                    json_t *projects, int64_t node_id, int64_t now_ms, struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s,
        "INSERT OR REPLACE INTO tokens(hash, kind, name, projects, node_id, created_ms)"
        " VALUES(?,?,?,?,?,?)", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, kind);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    bind_json(st, 4, projects);
    if (node_id)
        sqlite3_bind_int64(st, 5, node_id);
    else
        sqlite3_bind_null(st, 5);
    sqlite3_bind_int64(st, 6, now_ms);
    return step_done(s, st, err, "store token");
}

int store_token_get(struct store *s, const char *hash, struct token_info *out,
                    struct tide_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st =
        prepare(s, "SELECT kind, name, projects, node_id, expires_ms FROM tokens WHERE hash=?", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int r = sqlite3_step(st);
    int rc = 0;
    if (r == SQLITE_ROW) {
        out->kind = (enum token_kind)sqlite3_column_int(st, 0);
        snprintf(out->name, sizeof out->name, "%s", (const char *)sqlite3_column_text(st, 1));
        out->projects = column_json(st, 2);
        out->node_id = sqlite3_column_int64(st, 3);
        out->expires_ms = sqlite3_column_int64(st, 4); /* NULL reads 0: never */
    } else if (r == SQLITE_DONE) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "unknown token");
    } else {
        rc = db_error(s, err, "read token");
    }
    sqlite3_finalize(st);
    return rc;
}

int store_token_delete_node(struct store *s, int64_t node_id, struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "DELETE FROM tokens WHERE kind=? AND node_id=?", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int(st, 1, TOKEN_NODE);
    sqlite3_bind_int64(st, 2, node_id);
    return step_done(s, st, err, "delete node token");
}

void token_info_release(struct token_info *t)
{
    if (!t)
        return;
    json_decref(t->projects);
    t->projects = NULL;
}

int store_node_upsert(struct store *s, struct node *node, json_t *info, int64_t now_ms,
                      struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s,
        "INSERT INTO nodes(name, state, info, registered_ms) VALUES(?1, ?2, ?3, ?4)"
        " ON CONFLICT(name) DO UPDATE SET state=?2, info=?3, registered_ms=?4 RETURNING id", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_text(st, 1, node->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, node_state_name(node->state), -1, SQLITE_STATIC);
    bind_json(st, 3, info);
    sqlite3_bind_int64(st, 4, now_ms);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        node->id = sqlite3_column_int64(st, 0);
    else
        rc = db_error(s, err, "store node");
    sqlite3_finalize(st);
    return rc;
}

int store_node_set_state(struct store *s, int64_t node_id, enum node_state state,
                         struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "UPDATE nodes SET state=? WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_text(st, 1, node_state_name(state), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, node_id);
    return step_done(s, st, err, "update node");
}

int store_node_set_drain(struct store *s, int64_t node_id, enum node_state state,
                         const char *reason, struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "UPDATE nodes SET state=?, drain_reason=? WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_text(st, 1, node_state_name(state), -1, SQLITE_STATIC);
    if (reason)
        sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, node_id);
    return step_done(s, st, err, "update node drain");
}

int store_node_delete(struct store *s, int64_t node_id, struct tide_err *err)
{
    /* A tombstone, so finished jobs and events still name the node; an agent
     * that registers the name again brings the row back. */
    sqlite3_stmt *st = prepare(s, "UPDATE nodes SET state='deleted', drain_reason=NULL WHERE id=?",
                               err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int64(st, 1, node_id);
    int rc = step_done(s, st, err, "delete node");
    return rc ? rc : store_token_delete_node(s, node_id, err);
}

int store_job_count_free_attempt(struct store *s, int64_t job_id, struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "UPDATE jobs SET free_attempts = free_attempts + 1 WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int64(st, 1, job_id);
    return step_done(s, st, err, "count a free attempt");
}

int store_job_set_hold(struct store *s, int64_t job_id, const char *reason, struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "UPDATE jobs SET hold_reason=? WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    if (reason)
        sqlite3_bind_text(st, 1, reason, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 1);
    sqlite3_bind_int64(st, 2, job_id);
    return step_done(s, st, err, "update job hold");
}

/* Fills the static parts of a node from its registration JSON. */
static void node_from_info(struct node *n, json_t *info)
{
    n->cpus = (int)json_integer_value(json_object_get(info, "cpus"));
    n->memory_mib = json_integer_value(json_object_get(info, "memory_mib"));
    const char *driver = json_string_value(json_object_get(info, "driver"));
    snprintf(n->driver, sizeof n->driver, "%s", driver ? driver : "");
    json_t *gpus = json_object_get(info, "gpus");
    size_t i;
    json_t *g;
    n->ngpus = 0;
    json_array_foreach(gpus, i, g)
    {
        if (n->ngpus >= TIDE_MAX_GPUS_PER_NODE)
            break;
        struct gpu *gpu = &n->gpus[n->ngpus++];
        memset(gpu, 0, sizeof *gpu);
        gpu->index = (int)json_integer_value(json_object_get(g, "index"));
        const char *uuid = json_string_value(json_object_get(g, "uuid"));
        const char *name = json_string_value(json_object_get(g, "name"));
        snprintf(gpu->uuid, sizeof gpu->uuid, "%s", uuid ? uuid : "");
        snprintf(gpu->name, sizeof gpu->name, "%s", name ? name : "");
        gpu->memory_total_mib = json_integer_value(json_object_get(g, "memory_total_mib"));
    }
}

int store_nodes_load(struct store *s, struct cluster *c, int64_t now_ms, struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT id, name, state, info, drain_reason FROM nodes"
                                  " WHERE state != 'deleted' ORDER BY id", err);
    if (!st)
        return TIDE_EIO;
    int rc = 0, r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        struct node n;
        memset(&n, 0, sizeof n);
        n.id = sqlite3_column_int64(st, 0);
        snprintf(n.name, sizeof n.name, "%s", (const char *)sqlite3_column_text(st, 1));
        int state = node_state_from_name((const char *)sqlite3_column_text(st, 2));
        n.state = state < 0 ? NODE_READY : (enum node_state)state;
        n.last_heartbeat_ms = now_ms;
        json_t *info = column_json(st, 3);
        node_from_info(&n, info);
        json_decref(info);
        if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
            n.drained = true;
            snprintf(n.drain_reason, sizeof n.drain_reason, "%s",
                     (const char *)sqlite3_column_text(st, 4));
        }
        if (!cluster_put_node(c, &n)) {
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
            break;
        }
    }
    if (!rc && r != SQLITE_DONE)
        rc = db_error(s, err, "load nodes");
    sqlite3_finalize(st);
    return rc;
}

int store_job_insert(struct store *s, struct job *job, json_t *spec, const char *owner,
                     int64_t now_ms, struct tide_err *err)
{
    /* Prepared once: a batch or an array inserts thousands in one go. */
    sqlite3_stmt *st = store_sqlite_cached(s, STORE_STMT_JOB_INSERT,
        "INSERT INTO jobs(name, project, queue, priority, state, reason, spec, owner, submit_ms)"
        " VALUES(?,?,?,?,'pending','submitted',?,?,?)", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_text(st, 1, json_string_value(json_object_get(spec, "name")), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, job->project, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, job->queue, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, job->priority);
    bind_json(st, 5, spec);
    sqlite3_bind_text(st, 6, owner, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, now_ms);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, err, "insert job");
    sqlite3_reset(st);
    sqlite3_clear_bindings(st); /* the spec's text is freed now, not at the next use */
    if (!rc) {
        job->id = sqlite3_last_insert_rowid(s->db);
        job->submit_ms = now_ms;
        job->state = JOB_PENDING;
    }
    return rc;
}

int store_job_update(struct store *s, const struct job_update *u, struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s,
        "UPDATE jobs SET state=?2, reason=?3,"
        " attempt=CASE WHEN ?4 < 0 THEN attempt ELSE ?4 END,"
        " node_id=CASE WHEN ?5 < 0 THEN node_id WHEN ?5 = 0 THEN NULL ELSE ?5 END,"
        " gpus=CASE WHEN ?5 = 0 THEN NULL WHEN ?6 IS NULL THEN gpus ELSE ?6 END,"
        " exit_code=CASE WHEN ?7 = -2 THEN exit_code WHEN ?7 = -1 THEN NULL ELSE ?7 END,"
        " signal=CASE WHEN ?8 < 0 THEN signal WHEN ?8 = 0 THEN NULL ELSE ?8 END,"
        " start_ms=CASE WHEN ?9 = 0 THEN start_ms WHEN ?9 < 0 THEN COALESCE(start_ms, -?9) ELSE ?9 END,"
        " end_ms=CASE WHEN ?10 = 0 THEN end_ms ELSE ?10 END,"
        " cancel_requested=CASE WHEN ?11 < 0 THEN cancel_requested ELSE ?11 END,"
        " parts=CASE WHEN ?5 = 0 THEN NULL WHEN ?12 IS NULL THEN parts ELSE ?12 END"
        " WHERE id=?1", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int64(st, 1, u->job_id);
    sqlite3_bind_text(st, 2, job_state_name(u->state), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, u->reason ? u->reason : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, u->attempt);
    sqlite3_bind_int64(st, 5, u->node_id);
    if (u->gpus) {
        json_t *arr = json_array();
        for (int i = 0; i < u->ngpus; i++)
            json_array_append_new(arr, json_integer(u->gpus[i]));
        bind_json(st, 6, arr);
        json_decref(arr);
    } else {
        sqlite3_bind_null(st, 6);
    }
    sqlite3_bind_int(st, 7, u->exit_code);
    sqlite3_bind_int(st, 8, u->signal);
    sqlite3_bind_int64(st, 9, u->start_ms);
    sqlite3_bind_int64(st, 10, u->end_ms);
    sqlite3_bind_int(st, 11, u->cancel_requested);
    if (u->parts)
        bind_json(st, 12, u->parts);
    else
        sqlite3_bind_null(st, 12);
    int rc = step_done(s, st, err, "update job");
    if (!rc && sqlite3_changes(s->db) != 1)
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "job %lld not found", (long long)u->job_id);
    return rc;
}

/* Gives a loaded gang job back its other nodes: parts is [[node_id, [gpu, ...]], ...]. */
static void restore_parts(struct cluster *c, struct job *job, sqlite3_stmt *st, int col)
{
    json_t *parts = column_json(st, col);
    size_t i;
    json_t *part;
    json_array_foreach(parts, i, part)
    {
        struct node *node = cluster_find_node(c, json_integer_value(json_array_get(part, 0)));
        int idx[TIDE_MAX_GPUS_PER_NODE], n = 0;
        size_t k;
        json_t *g;
        json_array_foreach(json_array_get(part, 1), k, g) if (n < TIDE_MAX_GPUS_PER_NODE) idx[n++] =
            (int)json_integer_value(g);
        if (node)
            cluster_assign_part(c, job, node, idx, n);
    }
    json_decref(parts);
}

int store_jobs_load_active(struct store *s, struct cluster *c, struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s,
        "SELECT id, state, attempt, spec, node_id, gpus, cancel_requested, submit_ms, start_ms, parts,"
        " hold_reason, owner, free_attempts FROM jobs"
        " WHERE state NOT IN ('succeeded','failed','cancelled','timeout') ORDER BY id", err);
    if (!st)
        return TIDE_EIO;
    int rc = 0, r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *spec = column_json(st, 3);
        struct job job;
        memset(&job, 0, sizeof job);
        json_t *canonical = NULL;
        struct tide_err ignored;
        /* The stored spec passed validation once; parse it the same way again. */
        if (!spec || job_spec_from_object(spec, &canonical, &job, &ignored) != 0) {
            json_decref(spec);
            rc = tide_err_set(err, TIDE_EIO, NULL, "job %lld has an unreadable spec",
                              (long long)sqlite3_column_int64(st, 0));
            break;
        }
        json_decref(canonical);
        json_decref(spec);
        job.id = sqlite3_column_int64(st, 0);
        if (job_state_parse((const char *)sqlite3_column_text(st, 1), &job.state) != 0)
            job.state = JOB_PENDING;
        job.attempt = sqlite3_column_int(st, 2);
        job.cancel_requested = sqlite3_column_int(st, 6) != 0;
        job.submit_ms = sqlite3_column_int64(st, 7);
        job.start_ms = sqlite3_column_int64(st, 8);
        snprintf(job.user, sizeof job.user, "%s", (const char *)sqlite3_column_text(st, 11));
        job.free_attempts = sqlite3_column_int(st, 12);
        if (sqlite3_column_type(st, 10) != SQLITE_NULL && job.state == JOB_PENDING) {
            job.on_hold = true;
            snprintf(job.wait_reason, sizeof job.wait_reason, "held: %.150s",
                     (const char *)sqlite3_column_text(st, 10));
        }
        int64_t node_id = sqlite3_column_int64(st, 4);
        json_t *gpus = column_json(st, 5);
        struct job *stored = cluster_add_job(c, &job);
        if (!stored) {
            json_decref(gpus);
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
            break;
        }
        struct node *node = node_id ? cluster_find_node(c, node_id) : NULL;
        if (node && job_state_is_on_node(job.state)) {
            int idx[TIDE_MAX_GPUS_PER_NODE], n = 0;
            size_t i;
            json_t *g;
            json_array_foreach(gpus, i, g) if (n < TIDE_MAX_GPUS_PER_NODE) idx[n++] =
                (int)json_integer_value(g);
            cluster_assign(c, stored, node, idx, n);
            restore_parts(c, stored, st, 9);
        } else if (job_state_is_on_node(job.state) || job.state == JOB_LOST ||
                   job.state == JOB_PREEMPTED) {
            /* Its node is gone from the store: the attempt cannot be followed. */
            stored->state = JOB_PENDING;
        }
        json_decref(gpus);
    }
    if (!rc && r != SQLITE_DONE)
        rc = db_error(s, err, "load jobs");
    sqlite3_finalize(st);
    return rc;
}

static json_t *time_or_null(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return json_null();
    return json_real((double)sqlite3_column_int64(st, i) / 1000.0);
}

static json_t *int_or_null(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return json_null();
    return json_integer(sqlite3_column_int64(st, i));
}

#define JOB_COLUMNS                                                                                \
    "j.id, j.name, j.project, j.queue, j.priority, j.state, j.reason, j.attempt, j.spec,"         \
    " n.name, j.gpus, j.exit_code, j.signal, j.submit_ms, j.start_ms, j.end_ms,"                  \
    " j.cancel_requested, j.owner, j.hold_reason"

static json_t *job_row_to_json(sqlite3_stmt *st)
{
    json_t *gpus = column_json(st, 10);
    json_t *spec = column_json(st, 8);
    json_t *j = json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:s, s:i, s:o, s:o, s:o, s:o, s:o,"
                          " s:o, s:o, s:o, s:b, s:s}",
                          "id", (json_int_t)sqlite3_column_int64(st, 0),
                          "name", (const char *)sqlite3_column_text(st, 1),
                          "project", (const char *)sqlite3_column_text(st, 2),
                          "queue", (const char *)sqlite3_column_text(st, 3),
                          "priority", sqlite3_column_int(st, 4),
                          "state", (const char *)sqlite3_column_text(st, 5),
                          "reason", (const char *)sqlite3_column_text(st, 6),
                          "attempt", sqlite3_column_int(st, 7),
                          "spec", spec ? spec : json_object(),
                          "node", sqlite3_column_type(st, 9) == SQLITE_NULL
                                      ? json_null() : json_string((const char *)sqlite3_column_text(st, 9)),
                          "gpus", gpus ? gpus : json_array(),
                          "exit_code", int_or_null(st, 11),
                          "signal", int_or_null(st, 12),
                          "submit_time", time_or_null(st, 13),
                          "start_time", time_or_null(st, 14),
                          "end_time", time_or_null(st, 15),
                          "cancel_requested", sqlite3_column_int(st, 16) != 0,
                          "owner", (const char *)sqlite3_column_text(st, 17));
    if (j) {
        /* A hold matters only while the job waits (cancelling a held job keeps the column). */
        bool held = sqlite3_column_type(st, 18) != SQLITE_NULL &&
                    !strcmp((const char *)sqlite3_column_text(st, 5), "pending");
        json_object_set_new(j, "held", json_boolean(held));
        if (held)
            json_object_set_new(j, "hold_reason",
                                json_string((const char *)sqlite3_column_text(st, 18)));
    }
    return j;
}

int store_job_state(struct store *s, int64_t id, enum job_state *state, char project[TIDE_NAME_MAX],
                    struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT state, project FROM jobs WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int64(st, 1, id);
    int r = sqlite3_step(st), rc = 0;
    if (r == SQLITE_ROW) {
        if (job_state_parse((const char *)sqlite3_column_text(st, 0), state) != 0)
            rc = tide_err_set(err, TIDE_EIO, NULL, "job %lld has an unknown state", (long long)id);
        if (project)
            snprintf(project, TIDE_NAME_MAX, "%s", (const char *)sqlite3_column_text(st, 1));
    } else if (r == SQLITE_DONE) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "job %lld not found", (long long)id);
    } else {
        rc = db_error(s, err, "read job state");
    }
    sqlite3_finalize(st);
    return rc;
}

int store_job_last_placement(struct store *s, int64_t id, int64_t *node_id, int *attempt,
                             struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT COALESCE(node_id, 0), attempt FROM jobs WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int64(st, 1, id);
    int r = sqlite3_step(st), rc = 0;
    if (r == SQLITE_ROW) {
        *node_id = sqlite3_column_int64(st, 0);
        *attempt = sqlite3_column_int(st, 1);
    } else if (r == SQLITE_DONE) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "job %lld not found", (long long)id);
    } else {
        rc = db_error(s, err, "read job placement");
    }
    sqlite3_finalize(st);
    return rc;
}

int store_job_queue(struct store *s, int64_t id, char queue[TIDE_NAME_MAX], struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT queue FROM jobs WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int64(st, 1, id);
    int r = sqlite3_step(st), rc = 0;
    if (r == SQLITE_ROW)
        snprintf(queue, TIDE_NAME_MAX, "%s", (const char *)sqlite3_column_text(st, 0));
    else if (r == SQLITE_DONE)
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "job %lld not found", (long long)id);
    else
        rc = db_error(s, err, "read job queue");
    sqlite3_finalize(st);
    return rc;
}

int store_job_get(struct store *s, int64_t id, json_t **out, struct tide_err *err)
{
    *out = NULL;
    sqlite3_stmt *st = prepare(s, "SELECT " JOB_COLUMNS
                                  " FROM jobs j LEFT JOIN nodes n ON n.id = j.node_id WHERE j.id=?",
                               err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int64(st, 1, id);
    int r = sqlite3_step(st), rc = 0;
    if (r == SQLITE_ROW) {
        *out = job_row_to_json(st);
        if (!*out)
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    } else if (r == SQLITE_DONE) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "job %lld not found", (long long)id);
    } else {
        rc = db_error(s, err, "read job");
    }
    sqlite3_finalize(st);
    return rc;
}

int store_jobs_get_range(struct store *s, int64_t first, int64_t last, json_t *out,
                         struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT " JOB_COLUMNS
                                  " FROM jobs j LEFT JOIN nodes n ON n.id = j.node_id"
                                  " WHERE j.id BETWEEN ? AND ? ORDER BY j.id", err);
    if (!st)
        return TIDE_EIO;
    sqlite3_bind_int64(st, 1, first);
    sqlite3_bind_int64(st, 2, last);
    int r, rc = 0;
    int64_t n = 0;
    while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *job = job_row_to_json(st);
        if (!job || json_array_append_new(out, job) != 0)
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        n++;
    }
    if (!rc && r != SQLITE_DONE)
        rc = db_error(s, err, "read jobs");
    if (!rc && n != last - first + 1)
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "jobs %lld to %lld: %lld found", (long long)first,
                          (long long)last, (long long)n);
    sqlite3_finalize(st);
    return rc;
}

/* True when project is allowed by a token's project list (NULL = all). */
static int project_allowed(json_t *projects, const char *project)
{
    if (!projects)
        return 1;
    size_t i;
    json_t *p;
    json_array_foreach(projects, i, p) if (!strcmp(json_string_value(p), project)) return 1;
    return 0;
}

int store_jobs_list(struct store *s, const struct job_filter *f, json_t **out,
                    struct tide_err *err)
{
    *out = NULL;
    sqlite3_stmt *st = NULL;
    /* The read-only connection: callers need not hold the server's lock. */
    if (sqlite3_prepare_v2(s->reader,
                           "SELECT " JOB_COLUMNS
                           " FROM jobs j LEFT JOIN nodes n ON n.id = j.node_id"
                           " WHERE (?1 IS NULL OR j.state=?1) AND (?2 IS NULL OR j.queue=?2)"
                           " AND (?3 IS NULL OR j.project=?3) AND j.id < ?4 ORDER BY j.id DESC",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return tide_err_set(err, TIDE_EIO, NULL, "database: prepare job list: %s",
                            sqlite3_errmsg(s->reader));
    }
    sqlite3_bind_text(st, 1, f->state, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, f->queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, f->project, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, f->after_id > 0 ? f->after_id : INT64_MAX);
    json_t *jobs = json_array();
    int r = SQLITE_DONE, rc = 0, n = 0;
    int limit = f->limit > 0 ? f->limit : 1000;
    while (n < limit && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (!project_allowed(f->projects, (const char *)sqlite3_column_text(st, 2)))
            continue;
        json_array_append_new(jobs, job_row_to_json(st));
        n++;
    }
    if (n < limit && r != SQLITE_DONE)
        rc = tide_err_set(err, TIDE_EIO, NULL, "database: list jobs: %s",
                          sqlite3_errmsg(s->reader));
    sqlite3_finalize(st);
    if (rc)
        json_decref(jobs);
    else
        *out = jobs;
    return rc;
}

int store_jobs_count(struct store *s,
                     void (*fn)(const char *state, const char *queue, long long n, void *ctx),
                     void *ctx, struct tide_err *err)
{
    sqlite3_stmt *st = prepare(s, "SELECT state, queue, count(*) FROM jobs GROUP BY state, queue", err);
    if (!st)
        return TIDE_EIO;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW)
        fn((const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
           sqlite3_column_int64(st, 2), ctx);
    int rc = r == SQLITE_DONE ? 0 : db_error(s, err, "count jobs");
    sqlite3_finalize(st);
    return rc;
}
