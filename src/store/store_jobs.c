/*
 * The store's core rows (store.h): tokens, nodes and jobs, with the queries
 * the API and the scheduler's reload make of them. Written once for SQLite
 * and PostgreSQL through the connection layer (db.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "core/gpu_health.h"
#include "core/job_spec.h"
#include "store/store.h"
#include "store/store_db.h"
#include "store/store_health.h"

/* Prepares sql on the write connection; on failure fills err. The caller finalizes. */
static struct db_stmt *prepare(struct store *s, const char *sql, struct tide_err *err)
{
    return db_prepare(store_db(s), sql, err);
}

/* Steps a statement that returns no rows and finalizes it. */
static int step_done(struct db_stmt *st, struct tide_err *err, const char *what)
{
    int rc = db_step_done(st, what, err);
    db_finalize(st);
    return rc;
}

static void bind_json(struct db_stmt *st, int i, json_t *v)
{
    db_bind_text_take(st, i, v ? json_dumps(v, JSON_COMPACT) : NULL);
}

static json_t *column_json(struct db_stmt *st, int i)
{
    if (db_column_is_null(st, i))
        return NULL;
    return json_loads(db_column_text(st, i), 0, NULL);
}

int store_token_put(struct store *s, const char *hash, enum token_kind kind, const char *name,
                    json_t *projects, int64_t node_id, int64_t now_ms, struct tide_err *err)
{
    struct db_stmt *st = prepare(
        s,
        "INSERT INTO tokens(hash, kind, name, projects, node_id, created_ms) VALUES(?,?,?,?,?,?)"
        " ON CONFLICT(hash) DO UPDATE SET kind=excluded.kind, name=excluded.name,"
        " projects=excluded.projects, node_id=excluded.node_id, created_ms=excluded.created_ms,"
        " expires_ms=NULL",
        err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, hash);
    db_bind_int64(st, 2, kind);
    db_bind_text(st, 3, name);
    bind_json(st, 4, projects);
    if (node_id)
        db_bind_int64(st, 5, node_id);
    else
        db_bind_null(st, 5);
    db_bind_int64(st, 6, now_ms);
    return step_done(st, err, "store token");
}

int store_token_get(struct store *s, const char *hash, struct token_info *out, struct tide_err *err)
{
    memset(out, 0, sizeof *out);
    struct db_stmt *st =
        store_cached(s, STORE_STMT_TOKEN_GET,
                     "SELECT kind, name, projects, node_id, expires_ms FROM tokens WHERE hash=?",
                     err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, hash);
    int r = db_step(st, "read token", err);
    int rc = 0;
    if (r == DB_ROW) {
        out->kind = (enum token_kind)(int)db_column_int64(st, 0);
        snprintf(out->name, sizeof out->name, "%s", db_column_text(st, 1));
        out->projects = column_json(st, 2);
        out->node_id = db_column_int64(st, 3);
        out->expires_ms = db_column_int64(st, 4); /* NULL reads 0: never */
    } else if (r == DB_DONE) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "unknown token");
    } else {
        rc = r;
    }
    db_reset(st); /* ends its read; kept until store_close */
    return rc;
}

int store_token_delete_node(struct store *s, int64_t node_id, struct tide_err *err)
{
    struct db_stmt *st = prepare(s, "DELETE FROM tokens WHERE kind=? AND node_id=?", err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, TOKEN_NODE);
    db_bind_int64(st, 2, node_id);
    return step_done(st, err, "delete node token");
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
    struct db_stmt *st =
        prepare(s,
                "INSERT INTO nodes(name, state, info, registered_ms) VALUES(?1, ?2, ?3, ?4)"
                " ON CONFLICT(name) DO UPDATE SET state=?2, info=?3, registered_ms=?4 RETURNING id",
                err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, node->name);
    db_bind_text(st, 2, node_state_name(node->state));
    bind_json(st, 3, info);
    db_bind_int64(st, 4, now_ms);
    int r = db_step(st, "store node", err), rc = 0;
    if (r == DB_ROW)
        node->id = db_column_int64(st, 0);
    else
        rc = r < 0 ? r : tide_err_set(err, TIDE_EIO, NULL, "database: store node: no id returned");
    db_finalize(st);
    return rc;
}

int store_node_set_state(struct store *s, int64_t node_id, enum node_state state,
                         struct tide_err *err)
{
    struct db_stmt *st = prepare(s, "UPDATE nodes SET state=? WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, node_state_name(state));
    db_bind_int64(st, 2, node_id);
    return step_done(st, err, "update node");
}

int store_node_set_drain(struct store *s, int64_t node_id, enum node_state state,
                         const char *reason, struct tide_err *err)
{
    struct db_stmt *st = prepare(s, "UPDATE nodes SET state=?, drain_reason=? WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, node_state_name(state));
    db_bind_text(st, 2, reason); /* NULL binds NULL */
    db_bind_int64(st, 3, node_id);
    return step_done(st, err, "update node drain");
}

int store_node_delete(struct store *s, int64_t node_id, struct tide_err *err)
{
    /* A tombstone, so finished jobs and events still name the node; an agent
     * that registers the name again brings the row back. */
    struct db_stmt *st =
        prepare(s, "UPDATE nodes SET state='deleted', drain_reason=NULL WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, node_id);
    int rc = step_done(st, err, "delete node");
    if (!rc)
        rc = store_gpu_faults_forget(s, node_id, err);
    return rc ? rc : store_token_delete_node(s, node_id, err);
}

int store_job_count_attempt(struct store *s, int64_t job_id, bool free_attempt,
                            int lost_attempts, struct tide_err *err)
{
    struct db_stmt *st = prepare(s,
                                 "UPDATE jobs SET free_attempts = free_attempts + ?2,"
                                 " lost_attempts = ?3 WHERE id=?1",
                                 err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, job_id);
    db_bind_int64(st, 2, free_attempt);
    db_bind_int64(st, 3, lost_attempts);
    return step_done(st, err, "count an attempt");
}

int store_job_set_restart_after(struct store *s, int64_t job_id, int64_t at_ms,
                                struct tide_err *err)
{
    struct db_stmt *st = prepare(s, "UPDATE jobs SET restart_after_ms=?2 WHERE id=?1", err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, job_id);
    db_bind_int64(st, 2, at_ms);
    return step_done(st, err, "keep a requeued job's earliest restart");
}

int store_job_gang_save(struct store *s, const struct job *job, struct tide_err *err)
{
    json_t *ended = json_array();
    if (ended && job->first_part_exited)
        json_array_append_new(ended, json_integer(job->node_id));
    for (int i = 0; ended && i < job->nparts; i++)
        if (job->parts[i].exited)
            json_array_append_new(ended, json_integer(job->parts[i].node_id));
    json_t *gang = ended ? json_pack("{s:o}", "exited", ended) : NULL;
    if (gang && job->gang_failed)
        json_object_set_new(gang, "failed",
                            json_pack("{s:i, s:i, s:s, s:b}", "exit_code", job->gang_exit_code,
                                      "signal", job->gang_signal, "reason", job->gang_reason,
                                      "node_lost", job->gang_lost));
    char *text = gang ? json_dumps(gang, JSON_COMPACT) : NULL;
    json_decref(gang);
    if (!text)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    struct db_stmt *st = prepare(s, "UPDATE jobs SET gang=? WHERE id=?", err);
    int rc = st ? 0 : TIDE_EIO;
    if (st) {
        db_bind_text(st, 1, text);
        db_bind_int64(st, 2, job->id);
        rc = step_done(st, err, "keep a gang's ended parts");
    }
    free(text);
    return rc;
}

int store_job_set_hold(struct store *s, int64_t job_id, const char *reason, struct tide_err *err)
{
    struct db_stmt *st = prepare(s, "UPDATE jobs SET hold_reason=? WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, reason); /* NULL binds NULL */
    db_bind_int64(st, 2, job_id);
    return step_done(st, err, "update job hold");
}

/* Fills the static parts of a node from its registration JSON. */
static void node_from_info(struct node *n, json_t *info)
{
    n->cpus = (int)json_integer_value(json_object_get(info, "cpus"));
    n->memory_mib = json_integer_value(json_object_get(info, "memory_mib"));
    const char *driver = json_string_value(json_object_get(info, "driver"));
    snprintf(n->driver, sizeof n->driver, "%s", driver ? driver : "");
    /* the run that registered it: its registration sent again after a
     * restart is still its own (api_agent.c) */
    const char *run = json_string_value(json_object_get(info, "run"));
    if (run && strlen(run) < sizeof n->heartbeat_run)
        snprintf(n->heartbeat_run, sizeof n->heartbeat_run, "%s", run);
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
    struct db_stmt *st = prepare(s,
                                 "SELECT id, name, state, info, drain_reason FROM nodes"
                                 " WHERE state != 'deleted' ORDER BY id",
                                 err);
    if (!st)
        return TIDE_EIO;
    int rc = 0, r;
    while ((r = db_step(st, "load nodes", err)) == DB_ROW) {
        struct node n;
        memset(&n, 0, sizeof n);
        n.id = db_column_int64(st, 0);
        snprintf(n.name, sizeof n.name, "%s", db_column_text(st, 1));
        int state = node_state_from_name(db_column_text(st, 2));
        n.state = state < 0 ? NODE_READY : (enum node_state)state;
        n.last_heartbeat_ms = now_ms;
        json_t *info = column_json(st, 3);
        node_from_info(&n, info);
        json_decref(info);
        if (!db_column_is_null(st, 4)) {
            n.drained = true;
            snprintf(n.drain_reason, sizeof n.drain_reason, "%s", db_column_text(st, 4));
            /* a health probe's drain is told by its reason, so a passing
             * probe still lifts it after a restart (it looked like an
             * operator's, which only an operator lifts) */
            n.probe_drained =
                !strncmp(n.drain_reason, GPU_HEALTH_PROBE_PREFIX, strlen(GPU_HEALTH_PROBE_PREFIX));
            n.probe_drained_ms = now_ms;
        }
        if (!cluster_put_node(c, &n)) {
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
            break;
        }
    }
    if (!rc && r != DB_DONE)
        rc = r;
    db_finalize(st);
    return rc;
}

int store_job_insert(struct store *s, struct job *job, json_t *spec, const char *owner,
                     int64_t now_ms, struct tide_err *err)
{
    /* Prepared once: a batch or an array inserts thousands in one go. The
     * new id: RETURNING on PostgreSQL, the cheaper last rowid on SQLite. */
    bool lite = db_dialect(store_db(s)) == DB_SQLITE;
    struct db_stmt *st = store_cached(
        s, STORE_STMT_JOB_INSERT,
        lite ? "INSERT INTO jobs(name, project, queue, priority, state, reason, spec, owner,"
               " submit_ms) VALUES(?,?,?,?,'pending','submitted',?,?,?)"
             : "INSERT INTO jobs(name, project, queue, priority, state, reason, spec, owner,"
               " submit_ms) VALUES(?,?,?,?,'pending','submitted',?,?,?) RETURNING id",
        err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, json_string_value(json_object_get(spec, "name")));
    db_bind_text(st, 2, job->project);
    db_bind_text(st, 3, job->queue);
    db_bind_int64(st, 4, job->priority);
    bind_json(st, 5, spec);
    db_bind_text(st, 6, owner);
    db_bind_int64(st, 7, now_ms);
    int r = db_step(st, "insert job", err), rc = 0;
    if (lite && r == DB_DONE)
        job->id = db_last_insert_id(st);
    else if (r == DB_ROW)
        job->id = db_column_int64(st, 0);
    else
        rc = r < 0 ? r : tide_err_set(err, TIDE_EIO, NULL, "database: insert job: no id returned");
    db_reset(st); /* the spec's text is freed now, not at the next use */
    if (!rc) {
        job->submit_ms = now_ms;
        job->state = JOB_PENDING;
    }
    return rc;
}

/* n new ids into ids, increasing: after the largest id on SQLite (what
 * SQLite gives a row by itself, under the transaction's write lock), from
 * the identity's sequence on PostgreSQL (one round trip). */
static int reserve_job_ids(struct store *s, int64_t *ids, size_t n, struct tide_err *err)
{
    bool lite = db_dialect(store_db(s)) == DB_SQLITE;
    struct db_stmt *st = store_cached(
        s, STORE_STMT_JOB_IDS,
        lite ? "SELECT COALESCE(MAX(id), 0) FROM jobs"
             : "SELECT nextval(pg_get_serial_sequence('jobs', 'id')) FROM generate_series(1, ?1)",
        err);
    if (!st)
        return TIDE_EIO;
    if (!lite)
        db_bind_int64(st, 1, (int64_t)n);
    size_t got = 0;
    int r;
    while ((r = db_step(st, "reserve job ids", err)) == DB_ROW) {
        int64_t v = db_column_int64(st, 0);
        if (lite) {
            for (size_t i = 0; i < n; i++)
                ids[i] = v + 1 + (int64_t)i;
            got = n;
        } else if (got < n) {
            ids[got++] = v;
        }
    }
    db_reset(st);
    if (r < 0)
        return r;
    if (got != n)
        return tide_err_set(err, TIDE_EIO, NULL, "database: reserve job ids: %zu of %zu", got, n);
    return 0;
}

#define JOB_INSERT_HEAD                                                                            \
    "INSERT INTO jobs(id, name, project, queue, priority, state, reason, spec, owner,"             \
    " submit_ms) VALUES"
#define JOB_INSERT_ROW "?,?,?,?,?,'pending','submitted',?,?,?"

/* Rows [0, k) in one statement, k one of store_multirow_sizes (slot). */
static int insert_chunk(struct store *s, struct store_new_job *rows, size_t k, int slot,
                        int64_t now_ms, struct tide_err *err)
{
    struct db_stmt *st = store_cached_multirow(
        s, (enum store_stmt_slot)(STORE_STMT_JOB_INSERT_MANY + slot), JOB_INSERT_HEAD,
        JOB_INSERT_ROW, k, err);
    int rc = st ? 0 : err && err->code ? err->code : TIDE_EIO;
    if (rc) {
        for (size_t i = 0; i < k; i++) {
            free(rows[i].spec);
            rows[i].spec = NULL;
        }
        return rc;
    }
    for (size_t i = 0; i < k; i++) {
        int b = (int)i * 8;
        db_bind_int64(st, b + 1, rows[i].id);
        db_bind_text(st, b + 2, rows[i].name);
        db_bind_text(st, b + 3, rows[i].job->project);
        db_bind_text(st, b + 4, rows[i].job->queue);
        db_bind_int64(st, b + 5, rows[i].job->priority);
        db_bind_text_take(st, b + 6, rows[i].spec);
        rows[i].spec = NULL;
        db_bind_text(st, b + 7, rows[i].owner);
        db_bind_int64(st, b + 8, now_ms);
    }
    rc = db_step_done(st, "insert jobs", err);
    db_reset(st); /* the specs' text is freed now, not at the next use */
    return rc;
}

int store_jobs_insert_many(struct store *s, struct store_new_job *rows, size_t n, int64_t now_ms,
                           struct tide_err *err)
{
    int64_t *ids = n ? calloc(n, sizeof *ids) : NULL;
    int rc = n && !ids ? tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory") : 0;
    if (!rc && n)
        rc = reserve_job_ids(s, ids, n, err);
    for (size_t i = 0; !rc && i < n; i++)
        rows[i].id = ids[i];
    free(ids);
    size_t done = 0;
    while (!rc && done < n) {
        int slot;
        size_t k = store_multirow_chunk(n - done, &slot);
        rc = insert_chunk(s, rows + done, k, slot, now_ms, err);
        done += k;
    }
    for (size_t i = done; i < n; i++) { /* not reached: freed as promised */
        free(rows[i].spec);
        rows[i].spec = NULL;
    }
    return rc;
}

int store_job_update(struct store *s, const struct job_update *u, struct tide_err *err)
{
    struct db_stmt *st =
        store_cached(s, STORE_STMT_JOB_UPDATE,
                "UPDATE jobs SET state=?2, reason=?3,"
                " attempt=CASE WHEN ?4 < 0 THEN attempt ELSE ?4 END,"
                " node_id=CASE WHEN ?5 < 0 THEN node_id WHEN ?5 = 0 THEN NULL ELSE ?5 END,"
                " gpus=CASE WHEN ?5 = 0 THEN NULL WHEN CAST(?6 AS TEXT) IS NULL THEN gpus ELSE "
                "CAST(?6 AS TEXT) END,"
                " exit_code=CASE WHEN ?7 = -2 THEN exit_code WHEN ?7 = -1 THEN NULL ELSE ?7 END,"
                " signal=CASE WHEN ?8 < 0 THEN signal WHEN ?8 = 0 THEN NULL ELSE ?8 END,"
                " start_ms=CASE WHEN ?9 = 0 THEN start_ms WHEN ?9 < 0 THEN COALESCE(start_ms, -?9) "
                "ELSE ?9 END,"
                " end_ms=CASE WHEN ?10 = 0 THEN end_ms ELSE ?10 END,"
                " cancel_requested=CASE WHEN ?11 < 0 THEN cancel_requested ELSE ?11 END,"
                " parts=CASE WHEN ?5 = 0 THEN NULL WHEN CAST(?12 AS TEXT) IS NULL THEN parts ELSE "
                "CAST(?12 AS TEXT) END"
                ", gang=CASE WHEN ?5 < 0 THEN gang ELSE NULL END" /* a new placement: none ended */
                " WHERE id=?1",
                err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, u->job_id);
    db_bind_text(st, 2, job_state_name(u->state));
    db_bind_text(st, 3, u->reason ? u->reason : "");
    db_bind_int64(st, 4, u->attempt);
    db_bind_int64(st, 5, u->node_id);
    if (u->gpus) {
        json_t *arr = json_array();
        for (int i = 0; i < u->ngpus; i++)
            json_array_append_new(arr, json_integer(u->gpus[i]));
        bind_json(st, 6, arr);
        json_decref(arr);
    } else {
        db_bind_null(st, 6);
    }
    db_bind_int64(st, 7, u->exit_code);
    db_bind_int64(st, 8, u->signal);
    db_bind_int64(st, 9, u->start_ms);
    db_bind_int64(st, 10, u->end_ms);
    db_bind_int64(st, 11, u->cancel_requested);
    if (u->parts)
        bind_json(st, 12, u->parts);
    else
        db_bind_null(st, 12);
    int rc = db_step_done(st, "update job", err);
    if (!rc && db_changes(st) != 1)
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "job %lld not found", (long long)u->job_id);
    db_reset(st); /* kept: store_close finalizes it */
    return rc;
}

/* Gives a loaded gang job back its other nodes: parts is [[node_id, [gpu, ...]], ...]. */
static void restore_parts(struct cluster *c, struct job *job, struct db_stmt *st, int col)
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

/* Gives a loaded gang job back what its parts did (store_job_gang_save). */
static void restore_gang(struct job *job, struct db_stmt *st, int col)
{
    json_t *gang = column_json(st, col);
    size_t i;
    json_t *node_id;
    json_array_foreach(json_object_get(gang, "exited"), i, node_id)
    {
        if (json_is_integer(node_id))
            job_mark_part_exited(job, json_integer_value(node_id));
    }
    json_t *failed = json_object_get(gang, "failed");
    if (json_is_object(failed)) {
        job->gang_failed = true;
        job->gang_exit_code = (int)json_integer_value(json_object_get(failed, "exit_code"));
        job->gang_signal = (int)json_integer_value(json_object_get(failed, "signal"));
        job->gang_lost = json_is_true(json_object_get(failed, "node_lost"));
        const char *reason = json_string_value(json_object_get(failed, "reason"));
        snprintf(job->gang_reason, sizeof job->gang_reason, "%s", reason ? reason : "");
    }
    json_decref(gang);
}

int store_jobs_load_active(struct store *s, struct cluster *c, struct tide_err *err)
{
    struct db_stmt *st =
        prepare(s,
                "SELECT id, state, attempt, spec, node_id, gpus, cancel_requested, submit_ms, "
                "start_ms, parts,"
                " hold_reason, owner, free_attempts, gang, lost_attempts, restart_after_ms FROM jobs"
                " WHERE state NOT IN ('succeeded','failed','cancelled','timeout') ORDER BY id",
                err);
    if (!st)
        return TIDE_EIO;
    int rc = 0, r;
    while ((r = db_step(st, "load jobs", err)) == DB_ROW) {
        json_t *spec = column_json(st, 3);
        struct job job;
        memset(&job, 0, sizeof job);
        json_t *canonical = NULL;
        struct tide_err why;
        tide_err_clear(&why);
        /* The stored spec passed validation once; parse it the same way again. */
        if (!spec || job_spec_from_object(spec, &canonical, &job, &why) != 0) {
            json_decref(spec);
            rc = tide_err_set(err, TIDE_EIO, NULL, "job %lld has an unreadable spec (%s)",
                              (long long)db_column_int64(st, 0),
                              why.message[0] ? why.message : "not JSON");
            break;
        }
        json_decref(canonical);
        json_decref(spec);
        job.id = db_column_int64(st, 0);
        if (job_state_parse(db_column_text(st, 1), &job.state) != 0)
            job.state = JOB_PENDING;
        job.attempt = (int)db_column_int64(st, 2);
        job.cancel_requested = (int)db_column_int64(st, 6) != 0;
        job.submit_ms = db_column_int64(st, 7);
        job.start_ms = db_column_int64(st, 8);
        snprintf(job.user, sizeof job.user, "%s", db_column_text(st, 11));
        job.free_attempts = (int)db_column_int64(st, 12);
        job.lost_attempts = (int)db_column_int64(st, 14);
        job.restart_after_ms = db_column_int64(st, 15); /* NULL reads 0 */
        if (!db_column_is_null(st, 10) && job.state == JOB_PENDING) {
            job.on_hold = true;
            snprintf(job.wait_reason, sizeof job.wait_reason, "held: %.150s",
                     db_column_text(st, 10));
        }
        int64_t node_id = db_column_int64(st, 4);
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
            if (stored->nparts > 0)
                restore_gang(stored, st, 13);
        } else if (job_state_is_on_node(job.state) || job.state == JOB_LOST ||
                   job.state == JOB_PREEMPTED) {
            /* Its node is gone from the store: the attempt cannot be followed. */
            stored->state = JOB_PENDING;
        }
        json_decref(gpus);
    }
    if (!rc && r != DB_DONE)
        rc = r;
    db_finalize(st);
    return rc;
}

static json_t *time_or_null(struct db_stmt *st, int i)
{
    if (db_column_is_null(st, i))
        return json_null();
    return json_real((double)db_column_int64(st, i) / 1000.0);
}

static json_t *int_or_null(struct db_stmt *st, int i)
{
    if (db_column_is_null(st, i))
        return json_null();
    return json_integer(db_column_int64(st, i));
}

#define JOB_COLUMNS                                                                                \
    "j.id, j.name, j.project, j.queue, j.priority, j.state, j.reason, j.attempt, j.spec,"          \
    " n.name, j.gpus, j.exit_code, j.signal, j.submit_ms, j.start_ms, j.end_ms,"                   \
    " j.cancel_requested, j.owner, j.hold_reason"

static json_t *job_row_to_json(struct db_stmt *st)
{
    json_t *gpus = column_json(st, 10);
    json_t *spec = column_json(st, 8);
    json_t *j =
        json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:o, s:i, s:o, s:o, s:o, s:o, s:o,"
                  " s:o, s:o, s:o, s:b, s:s}",
                  "id", (json_int_t)db_column_int64(st, 0), "name", db_column_text(st, 1),
                  "project", db_column_text(st, 2), "queue", db_column_text(st, 3), "priority",
                  (int)db_column_int64(st, 4), "state", db_column_text(st, 5), "reason",
                  utf8_json_string(db_column_text(st, 6)), "attempt", (int)db_column_int64(st, 7),
                  "spec", spec ? spec : json_object(), "node",
                  db_column_is_null(st, 9) ? json_null() : json_string(db_column_text(st, 9)),
                  "gpus", gpus ? gpus : json_array(), "exit_code", int_or_null(st, 11), "signal",
                  int_or_null(st, 12), "submit_time", time_or_null(st, 13), "start_time",
                  time_or_null(st, 14), "end_time", time_or_null(st, 15), "cancel_requested",
                  (int)db_column_int64(st, 16) != 0, "owner", db_column_text(st, 17));
    if (j) {
        /* A hold matters only while the job waits (cancelling a held job keeps the column). */
        bool held = !db_column_is_null(st, 18) && !strcmp(db_column_text(st, 5), "pending");
        json_object_set_new(j, "held", json_boolean(held));
        if (held)
            json_object_set_new(j, "hold_reason", utf8_json_string(db_column_text(st, 18)));
    }
    return j;
}

int store_job_state(struct store *s, int64_t id, enum job_state *state, char project[TIDE_NAME_MAX],
                    struct tide_err *err)
{
    struct db_stmt *st = prepare(s, "SELECT state, project FROM jobs WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, id);
    int r = db_step(st, "read job state", err), rc = 0;
    if (r == DB_ROW) {
        if (job_state_parse(db_column_text(st, 0), state) != 0)
            rc = tide_err_set(err, TIDE_EIO, NULL, "job %lld has an unknown state", (long long)id);
        if (project)
            snprintf(project, TIDE_NAME_MAX, "%s", db_column_text(st, 1));
    } else if (r == DB_DONE) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "job %lld not found", (long long)id);
    } else {
        rc = r;
    }
    db_finalize(st);
    return rc;
}

int store_job_last_placement(struct store *s, int64_t id, int64_t *node_id, int *attempt,
                             struct tide_err *err)
{
    struct db_stmt *st =
        prepare(s, "SELECT COALESCE(node_id, 0), attempt FROM jobs WHERE id=?", err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, id);
    int r = db_step(st, "read job placement", err), rc = 0;
    if (r == DB_ROW) {
        *node_id = db_column_int64(st, 0);
        *attempt = (int)db_column_int64(st, 1);
    } else if (r == DB_DONE) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "job %lld not found", (long long)id);
    } else {
        rc = r;
    }
    db_finalize(st);
    return rc;
}

/* Job id's row through kept statement slot (sql takes the id as its one
 * parameter): 0 with *st on the row, to read and then end with db_reset
 * (the statement is kept until store_close); else the error, TIDE_ENOENT
 * when there is no such job, and *st NULL. */
static int job_row(struct store *s, enum store_stmt_slot slot, const char *sql, int64_t id,
                   const char *what, struct db_stmt **st, struct tide_err *err)
{
    *st = store_cached(s, slot, sql, err);
    if (!*st)
        return TIDE_EIO;
    db_bind_int64(*st, 1, id);
    int r = db_step(*st, what, err);
    if (r == DB_ROW)
        return 0;
    db_reset(*st);
    *st = NULL;
    if (r == DB_DONE)
        return tide_err_set(err, TIDE_ENOENT, NULL, "job %lld not found", (long long)id);
    return r;
}

int store_job_queue(struct store *s, int64_t id, char queue[TIDE_NAME_MAX], struct tide_err *err)
{
    struct db_stmt *st;
    int rc = job_row(s, STORE_STMT_JOB_QUEUE, "SELECT queue FROM jobs WHERE id=?", id,
                     "read job queue", &st, err);
    if (rc == 0) {
        snprintf(queue, TIDE_NAME_MAX, "%s", db_column_text(st, 0));
        db_reset(st);
    }
    return rc;
}

int store_job_spec(struct store *s, int64_t id, json_t **out, struct tide_err *err)
{
    *out = NULL;
    struct db_stmt *st;
    int rc = job_row(s, STORE_STMT_JOB_SPEC, "SELECT spec FROM jobs WHERE id=?", id,
                     "read job spec", &st, err);
    if (rc == 0) {
        *out = column_json(st, 0);
        if (!*out)
            rc = tide_err_set(err, TIDE_EIO, NULL, "job %lld has an unreadable spec",
                              (long long)id);
        db_reset(st);
    }
    return rc;
}

int store_job_ran(struct store *s, int64_t id, char project[TIDE_NAME_MAX],
                  char queue[TIDE_NAME_MAX], int64_t *start_ms, struct tide_err *err)
{
    struct db_stmt *st;
    int rc = job_row(s, STORE_STMT_JOB_RAN, "SELECT project, queue, start_ms FROM jobs WHERE id=?",
                     id, "read job run", &st, err);
    if (rc == 0) {
        snprintf(project, TIDE_NAME_MAX, "%s", db_column_text(st, 0));
        snprintf(queue, TIDE_NAME_MAX, "%s", db_column_text(st, 1));
        *start_ms = db_column_int64(st, 2); /* NULL reads 0 */
        db_reset(st);
    }
    return rc;
}

int store_job_get(struct store *s, int64_t id, json_t **out, struct tide_err *err)
{
    *out = NULL;
    struct db_stmt *st;
    int rc = job_row(
        s, STORE_STMT_JOB_GET,
        "SELECT " JOB_COLUMNS " FROM jobs j LEFT JOIN nodes n ON n.id = j.node_id WHERE j.id=?", id,
        "read job", &st, err);
    if (rc == 0) {
        *out = job_row_to_json(st);
        if (!*out)
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        db_reset(st);
    }
    return rc;
}

int store_jobs_get_range(struct store *s, int64_t first, int64_t last, json_t *out,
                         struct tide_err *err)
{
    struct db_stmt *st =
        prepare(s,
                "SELECT " JOB_COLUMNS " FROM jobs j LEFT JOIN nodes n ON n.id = j.node_id"
                " WHERE j.id BETWEEN ? AND ? ORDER BY j.id",
                err);
    if (!st)
        return TIDE_EIO;
    db_bind_int64(st, 1, first);
    db_bind_int64(st, 2, last);
    int r, rc = 0;
    int64_t n = 0;
    while (!rc && (r = db_step(st, "read jobs", err)) == DB_ROW) {
        json_t *job = job_row_to_json(st);
        if (!job || json_array_append_new(out, job) != 0)
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        n++;
    }
    if (!rc && r != DB_DONE)
        rc = r;
    if (!rc && n != last - first + 1)
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "jobs %lld to %lld: %lld found", (long long)first,
                          (long long)last, (long long)n);
    db_finalize(st);
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

/* A page of listed jobs: ?5 is the cursor, the id the last page ended on. */
#define JOBS_LIST_SQL(WALK)                                                                        \
    "SELECT " JOB_COLUMNS " FROM jobs j LEFT JOIN nodes n ON n.id = j.node_id"                     \
    " WHERE (CAST(?1 AS TEXT) IS NULL OR j.state=?1)"                                              \
    " AND (CAST(?2 AS TEXT) IS NULL OR j.queue=?2)"                                                \
    " AND (CAST(?3 AS TEXT) IS NULL OR j.project=?3) AND " WALK " LIMIT ?4"
static const char jobs_list_newest[] = JOBS_LIST_SQL("j.id < ?5 ORDER BY j.id DESC");
static const char jobs_list_oldest[] = JOBS_LIST_SQL("j.id > ?5 ORDER BY j.id ASC");
#undef JOBS_LIST_SQL

int store_jobs_list(struct store *s, const struct job_filter *f, json_t **out, struct tide_err *err)
{
    *out = NULL;
    /* The read-only connection: callers need not hold the server's lock. */
    struct db *db = store_reader(s);
    int rc = db_reconnect(db, err); /* the reader holds no lock: reopen freely */
    if (rc)
        return rc;
    struct db_stmt *st = db_prepare(db, f->oldest_first ? jobs_list_oldest : jobs_list_newest, err);
    if (!st)
        return TIDE_EIO;
    int limit = f->limit > 0 ? f->limit : 1000;
    db_bind_text(st, 1, f->state);
    db_bind_text(st, 2, f->queue);
    db_bind_text(st, 3, f->project);
    /* A token's project list is applied here, past the database's limit. */
    db_bind_int64(st, 4, f->projects ? INT64_MAX : limit);
    db_bind_int64(st, 5, f->after_id > 0 ? f->after_id : f->oldest_first ? 0 : INT64_MAX);
    json_t *jobs = json_array();
    int r = DB_DONE, n = 0;
    while (n < limit && (r = db_step(st, "list jobs", err)) == DB_ROW) {
        if (!project_allowed(f->projects, db_column_text(st, 2)))
            continue;
        json_array_append_new(jobs, job_row_to_json(st));
        n++;
    }
    if (n < limit && r < 0)
        rc = r;
    db_finalize(st);
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
    struct db_stmt *st =
        prepare(s, "SELECT state, queue, count(*) FROM jobs GROUP BY state, queue", err);
    if (!st)
        return TIDE_EIO;
    int r;
    while ((r = db_step(st, "count jobs", err)) == DB_ROW)
        fn(db_column_text(st, 0), db_column_text(st, 1), db_column_int64(st, 2), ctx);
    int rc = r == DB_DONE ? 0 : r;
    db_finalize(st);
    return rc;
}
