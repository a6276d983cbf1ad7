/*
 * The store's schema as one ordered list of migrations, applied when a
 * store opens: a schema_version table says how far a database has come,
 * the missing steps run in one transaction, and a database newer than this
 * binary is refused. Each step has its SQLite and its PostgreSQL text.
 *
 * Version 1 is the schema as it stood before versions were kept; on SQLite
 * it also brings up to date a database from that time (tables made by the
 * old CREATE TABLE IF NOT EXISTS calls, columns added later by ALTER TABLE),
 * so it runs whatever the database already holds. Later steps are plain SQL:
 * append them, never edit one that has shipped.
 */
#include <stdio.h>
#include <string.h>

#include "store/store_db.h"

/* pg_advisory_xact_lock's key: servers starting together migrate in turn. */
#define MIGRATE_LOCK_KEY "1953063013002"

/* A step: its dialect's SQL, then (SQLite) sqlite_after, then both's SQL. */
struct migration {
    int version;
    const char *sqlite;
    const char *postgres;
    int (*sqlite_after)(struct db *db, struct tide_err *err);
    const char *both;
};

static const char v1_sqlite[] =
    "CREATE TABLE IF NOT EXISTS tokens(hash TEXT PRIMARY KEY, kind INTEGER NOT NULL,"
    "  name TEXT NOT NULL, projects TEXT, node_id INTEGER, created_ms INTEGER NOT NULL,"
    "  expires_ms INTEGER);"
    "CREATE TABLE IF NOT EXISTS nodes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    "  state TEXT NOT NULL, info TEXT NOT NULL, registered_ms INTEGER NOT NULL, drain_reason TEXT);"
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    "  project TEXT NOT NULL, queue TEXT NOT NULL, priority INTEGER NOT NULL,"
    "  state TEXT NOT NULL, reason TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,"
    "  spec TEXT NOT NULL, owner TEXT NOT NULL, node_id INTEGER, gpus TEXT,"
    "  exit_code INTEGER, signal INTEGER, cancel_requested INTEGER NOT NULL DEFAULT 0,"
    "  parts TEXT, submit_ms INTEGER NOT NULL, start_ms INTEGER, end_ms INTEGER,"
    "  hold_reason TEXT, free_attempts INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS pool_nodes(node_id INTEGER PRIMARY KEY, pool TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL, ready_ms INTEGER, ended_ms INTEGER, provider_id TEXT,"
    "  interrupt_deadline_ms INTEGER);"
    "CREATE TABLE IF NOT EXISTS pool_meters(pool TEXT NOT NULL, project TEXT NOT NULL,"
    "  node_ms INTEGER NOT NULL, gpu_ms INTEGER NOT NULL, PRIMARY KEY(pool, project));"
    "CREATE TABLE IF NOT EXISTS budget_state(project TEXT NOT NULL, period_kind INTEGER NOT NULL,"
    "  period INTEGER NOT NULL, spent_micros INTEGER NOT NULL, spent_rem INTEGER NOT NULL,"
    "  alerted_pct INTEGER NOT NULL, PRIMARY KEY(project, period_kind));"
    "CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL,"
    "  kind TEXT NOT NULL, job_id INTEGER, node_id INTEGER, message TEXT NOT NULL,"
    "  node TEXT, pool TEXT, project TEXT);"
    "CREATE TABLE IF NOT EXISTS gpu_faults(node_id INTEGER NOT NULL,"
    "  gpu_index INTEGER NOT NULL, faulty INTEGER NOT NULL, fault TEXT,"
    "  seq INTEGER NOT NULL, PRIMARY KEY(node_id, gpu_index));"
    "CREATE TABLE IF NOT EXISTS idempotency(owner TEXT NOT NULL, key TEXT NOT NULL,"
    "  request_hash TEXT NOT NULL, job_ids TEXT NOT NULL, created_ms INTEGER NOT NULL,"
    "  PRIMARY KEY(owner, key));"
    "CREATE TABLE IF NOT EXISTS usage_pool_days(day INTEGER NOT NULL, pool TEXT NOT NULL,"
    "  node_ms INTEGER NOT NULL, gpu_ms INTEGER NOT NULL, PRIMARY KEY(day, pool));"
    "CREATE TABLE IF NOT EXISTS usage_uses(day INTEGER NOT NULL, pool TEXT NOT NULL,"
    "  project TEXT NOT NULL, queue TEXT NOT NULL, \"user\" TEXT NOT NULL DEFAULT '',"
    "  gpu_ms INTEGER NOT NULL, PRIMARY KEY(day, pool, project, queue, \"user\"));"
    "CREATE TABLE IF NOT EXISTS leader(id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  epoch INTEGER NOT NULL, url TEXT NOT NULL, since_ms INTEGER NOT NULL);";

/* Made after a legacy database's columns are in place. Index entries end
 * with the row id, so `col = ? AND id > ? ORDER BY id` walks one range. */
static const char v1_indexes[] =
    "CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state);"
    "CREATE INDEX IF NOT EXISTS jobs_by_project ON jobs(project);"
    "CREATE INDEX IF NOT EXISTS jobs_by_end ON jobs(end_ms);"
    "CREATE INDEX IF NOT EXISTS tokens_by_name ON tokens(name);"
    "CREATE INDEX IF NOT EXISTS events_by_job ON events(job_id);"
    "CREATE INDEX IF NOT EXISTS events_by_node ON events(node);"
    "CREATE INDEX IF NOT EXISTS events_by_pool ON events(pool);"
    "CREATE INDEX IF NOT EXISTS events_by_project ON events(project);"
    "CREATE INDEX IF NOT EXISTS events_by_time ON events(time_ms);"
    "CREATE INDEX IF NOT EXISTS idempotency_by_age ON idempotency(created_ms);";

/* Times are BIGINT milliseconds (PostgreSQL's INTEGER has 32 bits), ids BIGINT. */
static const char v1_postgres[] =
    "CREATE TABLE IF NOT EXISTS tokens(hash TEXT PRIMARY KEY, kind INTEGER NOT NULL,"
    "  name TEXT NOT NULL, projects TEXT, node_id BIGINT, created_ms BIGINT NOT NULL,"
    "  expires_ms BIGINT);"
    "CREATE TABLE IF NOT EXISTS nodes(id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE, state TEXT NOT NULL, info TEXT NOT NULL,"
    "  registered_ms BIGINT NOT NULL, drain_reason TEXT);"
    "CREATE TABLE IF NOT EXISTS jobs(id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
    "  name TEXT NOT NULL, project TEXT NOT NULL, queue TEXT NOT NULL, priority BIGINT NOT NULL,"
    "  state TEXT NOT NULL, reason TEXT NOT NULL, attempt BIGINT NOT NULL DEFAULT 0,"
    "  spec TEXT NOT NULL, owner TEXT NOT NULL, node_id BIGINT, gpus TEXT,"
    "  exit_code BIGINT, signal BIGINT, cancel_requested BIGINT NOT NULL DEFAULT 0,"
    "  parts TEXT, submit_ms BIGINT NOT NULL, start_ms BIGINT, end_ms BIGINT,"
    "  hold_reason TEXT, free_attempts BIGINT NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS pool_nodes(node_id BIGINT PRIMARY KEY, pool TEXT NOT NULL,"
    "  created_ms BIGINT NOT NULL, ready_ms BIGINT, ended_ms BIGINT, provider_id TEXT,"
    "  interrupt_deadline_ms BIGINT);"
    "CREATE TABLE IF NOT EXISTS pool_meters(pool TEXT NOT NULL, project TEXT NOT NULL,"
    "  node_ms BIGINT NOT NULL, gpu_ms BIGINT NOT NULL, PRIMARY KEY(pool, project));"
    "CREATE TABLE IF NOT EXISTS budget_state(project TEXT NOT NULL, period_kind INTEGER NOT NULL,"
    "  period BIGINT NOT NULL, spent_micros BIGINT NOT NULL, spent_rem BIGINT NOT NULL,"
    "  alerted_pct INTEGER NOT NULL, PRIMARY KEY(project, period_kind));"
    "CREATE TABLE IF NOT EXISTS events(id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
    "  time_ms BIGINT NOT NULL, kind TEXT NOT NULL, job_id BIGINT, node_id BIGINT,"
    "  message TEXT NOT NULL, node TEXT, pool TEXT, project TEXT);"
    "CREATE TABLE IF NOT EXISTS gpu_faults(node_id BIGINT NOT NULL,"
    "  gpu_index INTEGER NOT NULL, faulty INTEGER NOT NULL, fault TEXT,"
    "  seq BIGINT NOT NULL, PRIMARY KEY(node_id, gpu_index));"
    "CREATE TABLE IF NOT EXISTS idempotency(owner TEXT NOT NULL, key TEXT NOT NULL,"
    "  request_hash TEXT NOT NULL, job_ids TEXT NOT NULL, created_ms BIGINT NOT NULL,"
    "  PRIMARY KEY(owner, key));"
    "CREATE TABLE IF NOT EXISTS usage_pool_days(day BIGINT NOT NULL, pool TEXT NOT NULL,"
    "  node_ms BIGINT NOT NULL, gpu_ms BIGINT NOT NULL, PRIMARY KEY(day, pool));"
    "CREATE TABLE IF NOT EXISTS usage_uses(day BIGINT NOT NULL, pool TEXT NOT NULL,"
    "  project TEXT NOT NULL, queue TEXT NOT NULL, \"user\" TEXT NOT NULL DEFAULT '',"
    "  gpu_ms BIGINT NOT NULL, PRIMARY KEY(day, pool, project, queue, \"user\"));"
    "CREATE TABLE IF NOT EXISTS leader(id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  epoch BIGINT NOT NULL, url TEXT NOT NULL, since_ms BIGINT NOT NULL);";

/* 1 when SQLite's table has column, 0 when not, <0 on error. */
static int has_column(struct db *db, const char *table, const char *column, struct tide_err *err)
{
    struct db_stmt *st = db_prepare(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", err);
    if (!st)
        return TIDE_EIO;
    db_bind_text(st, 1, table);
    db_bind_text(st, 2, column);
    int r = db_step(st, "read the table's columns", err);
    db_finalize(st);
    return r < 0 ? r : r == DB_ROW;
}

/* Columns that databases from before versions got by ALTER TABLE, in the
 * order they came: added where missing. */
static const struct {
    const char *table, *column, *add;
} legacy_columns[] = {
    {"jobs", "parts", "ALTER TABLE jobs ADD COLUMN parts TEXT"},
    {"jobs", "hold_reason", "ALTER TABLE jobs ADD COLUMN hold_reason TEXT"},
    {"nodes", "drain_reason", "ALTER TABLE nodes ADD COLUMN drain_reason TEXT"},
    {"jobs", "free_attempts",
     "ALTER TABLE jobs ADD COLUMN free_attempts INTEGER NOT NULL DEFAULT 0"},
    {"tokens", "expires_ms", "ALTER TABLE tokens ADD COLUMN expires_ms INTEGER"},
    {"pool_nodes", "interrupt_deadline_ms",
     "ALTER TABLE pool_nodes ADD COLUMN interrupt_deadline_ms INTEGER"},
};

/* Events from before they carried their node, pool and project get the
 * columns, filled from the rows they name. */
static const char legacy_events[] =
    "ALTER TABLE events ADD COLUMN node TEXT;"
    "ALTER TABLE events ADD COLUMN pool TEXT;"
    "ALTER TABLE events ADD COLUMN project TEXT;"
    "UPDATE events SET node = (SELECT name FROM nodes WHERE id = events.node_id),"
    "  pool = (SELECT pool FROM pool_nodes WHERE node_id = events.node_id),"
    "  project = (SELECT project FROM jobs WHERE id = events.job_id);";

/* A usage ledger from before per-user usage: the user joins the key, so
 * the table is copied into the new shape (its rows' user is ""). */
static const char legacy_usage[] =
    "CREATE TABLE usage_uses_by_user(day INTEGER NOT NULL, pool TEXT NOT NULL,"
    "  project TEXT NOT NULL, queue TEXT NOT NULL, \"user\" TEXT NOT NULL DEFAULT '',"
    "  gpu_ms INTEGER NOT NULL, PRIMARY KEY(day, pool, project, queue, \"user\"));"
    "INSERT INTO usage_uses_by_user(day, pool, project, queue, \"user\", gpu_ms)"
    "  SELECT day, pool, project, queue, '', gpu_ms FROM usage_uses;"
    "DROP TABLE usage_uses;"
    "ALTER TABLE usage_uses_by_user RENAME TO usage_uses;";

static int v1_sqlite_after(struct db *db, struct tide_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof legacy_columns / sizeof legacy_columns[0]; i++) {
        int has = has_column(db, legacy_columns[i].table, legacy_columns[i].column, err);
        rc = has < 0 ? has : has ? 0 : db_exec(db, legacy_columns[i].add, err);
    }
    int has = rc ? rc : has_column(db, "events", "project", err);
    if (has == 0)
        rc = db_exec(db, legacy_events, err);
    else if (has < 0)
        rc = has;
    has = rc ? rc : has_column(db, "usage_uses", "user", err);
    if (has == 0)
        rc = db_exec(db, legacy_usage, err);
    else if (has < 0)
        rc = has;
    return rc;
}

/* Version 2: fewer index writes per job (a submit wrote 10 B-tree entries).
 * Listings walk the id (primary key) and filter, so jobs_by_state and
 * jobs_by_project served no query but the metrics' count, which scans all
 * rows anyway; retention picks finished jobs by end_ms, which only they
 * have. An event's node and pool are null until its job is placed (and
 * always for budget events): indexed only where set, which `node = ?` and
 * `pool = ?` imply. Same text on both databases; like version 1 it may
 * run again on a database that lost its schema_version table. */
static const char v2_indexes[] =
    "DROP INDEX IF EXISTS jobs_by_state;"
    "DROP INDEX IF EXISTS jobs_by_project;"
    "DROP INDEX IF EXISTS jobs_by_end;"
    "CREATE INDEX IF NOT EXISTS jobs_ended_by_end ON jobs(end_ms) WHERE end_ms IS NOT NULL;"
    "DROP INDEX IF EXISTS events_by_node;"
    "DROP INDEX IF EXISTS events_by_pool;"
    "CREATE INDEX IF NOT EXISTS events_with_node ON events(node) WHERE node IS NOT NULL;"
    "CREATE INDEX IF NOT EXISTS events_with_pool ON events(pool) WHERE pool IS NOT NULL;";

/* Version 3: each event index is a B-tree leaf written by every
 * transaction that adds an event (a job's submit, placement, start and end:
 * about 4 pages of a job's 17 in bench/e2e.py per index). The time and
 * project filters walk the id (the primary key) from the cursor, oldest or
 * newest first, and stop at the page's end, as job listings do: exact, and
 * read on the events connection without the server's lock, at the price of
 * walking the rows between matches when few events match (about 0.1 us a
 * row). The job index stays (job= and retention's delete by job), and so
 * do the node and pool ones (set only on a placed job's events). */
static const char v3_indexes[] =
    "DROP INDEX IF EXISTS events_by_time;"
    "DROP INDEX IF EXISTS events_by_project;";

/* Adds column to table unless it is there (errors are negative). */
static int add_column(struct db *db, const char *table, const char *column, const char *sql,
                      struct tide_err *err)
{
    int has = has_column(db, table, column, err);
    return has < 0 ? has : has ? 0 : db_exec(db, sql, err);
}

/* Version 4: a gang job's parts that ended while others ran, and its first
 * failure (store_job_gang_save), which lived only in memory: a restarted
 * server started an ended part again, or never saw the gang end. */
static int v4_sqlite(struct db *db, struct tide_err *err)
{
    return add_column(db, "jobs", "gang", "ALTER TABLE jobs ADD COLUMN gang TEXT", err);
}

/* Version 5: how many of a job's attempts were lost with their node or
 * task (jobs.lost_attempts): past SCHED_MAX_LOST_ATTEMPTS the job ends
 * failed; and when a job requeued off a force-deleted node may start again
 * (jobs.restart_after_ms). Both lived in memory only or not at all. */
static int v5_sqlite(struct db *db, struct tide_err *err)
{
    int rc =
        add_column(db, "jobs", "lost_attempts",
                   "ALTER TABLE jobs ADD COLUMN lost_attempts INTEGER NOT NULL DEFAULT 0", err);
    return rc ? rc
              : add_column(db, "jobs", "restart_after_ms",
                           "ALTER TABLE jobs ADD COLUMN restart_after_ms INTEGER", err);
}

/* Version 6: the agent run a GPU's fault count is of (gpu_faults.seq_run):
 * an agent that restarts counts from 0 again, and the server, not knowing
 * which run its count was, ignored the new run's faults until they passed
 * it. */
static int v6_sqlite(struct db *db, struct tide_err *err)
{
    return add_column(db, "gpu_faults", "seq_run", "ALTER TABLE gpu_faults ADD COLUMN seq_run TEXT",
                      err);
}

/* Version 7: a node's GPU faults counted towards node_fault_limit, since
 * when, and whether they failed it (core/gpu_health.h), which lived in
 * memory: a restarted server counted from 0 again, and forgot that a
 * drained pool node was failed. */
static const char v7_sqlite[] =
    "CREATE TABLE IF NOT EXISTS node_faults(node_id INTEGER PRIMARY KEY,"
    "  faults INTEGER NOT NULL, window_start_ms INTEGER NOT NULL, failed INTEGER NOT NULL)";
static const char v7_postgres[] =
    "CREATE TABLE IF NOT EXISTS node_faults(node_id BIGINT PRIMARY KEY,"
    "  faults INTEGER NOT NULL, window_start_ms BIGINT NOT NULL, failed INTEGER NOT NULL)";

static const struct migration migrations[] = {
    {1, v1_sqlite, v1_postgres, v1_sqlite_after, v1_indexes},
    {2, NULL, NULL, NULL, v2_indexes},
    {3, NULL, NULL, NULL, v3_indexes},
    {4, NULL, "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS gang TEXT", v4_sqlite, NULL},
    {5, NULL,
     "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS lost_attempts BIGINT NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS restart_after_ms BIGINT",
     v5_sqlite, NULL},
    {6, NULL, "ALTER TABLE gpu_faults ADD COLUMN IF NOT EXISTS seq_run TEXT", v6_sqlite, NULL},
    {7, v7_sqlite, v7_postgres, NULL, NULL},
};

#define KNOWN_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

/* The SQL of step m on db's dialect. */
static int apply(struct db *db, const struct migration *m, struct tide_err *err)
{
    bool lite = db_dialect(db) == DB_SQLITE;
    const char *own = lite ? m->sqlite : m->postgres;
    int rc = own ? db_exec(db, own, err) : 0;
    if (!rc && lite && m->sqlite_after)
        rc = m->sqlite_after(db, err);
    if (!rc && m->both)
        rc = db_exec(db, m->both, err);
    return rc;
}

/* The database's version: 0 when it has none yet. */
static int read_version(struct db *db, int *version, struct tide_err *err)
{
    struct db_stmt *st =
        db_prepare(db, "SELECT COALESCE(MAX(version), 0) FROM schema_version", err);
    if (!st)
        return TIDE_EIO;
    int r = db_step(st, "read the schema version", err);
    if (r == DB_ROW)
        *version = (int)db_column_int64(st, 0);
    db_finalize(st);
    return r < 0 ? r : 0;
}

static int migrate(struct db *db, struct tide_err *err)
{
    int rc = 0, version = 0;
    if (db_dialect(db) == DB_POSTGRES)
        rc = db_exec(db, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")", err);
    if (!rc)
        rc = db_exec(db, "CREATE TABLE IF NOT EXISTS schema_version(version BIGINT NOT NULL)", err);
    if (!rc)
        rc = read_version(db, &version, err);
    if (rc)
        return rc;
    if (version > KNOWN_VERSION)
        return tide_err_set(err, TIDE_EINVAL, "store",
                            "database schema is version %d, this tide knows up to %d: upgrade tide",
                            version, KNOWN_VERSION);
    for (int i = 0; !rc && i < KNOWN_VERSION; i++)
        if (migrations[i].version > version)
            rc = apply(db, &migrations[i], err);
    if (!rc && version < KNOWN_VERSION) {
        char sql[96];
        snprintf(sql, sizeof sql,
                 "DELETE FROM schema_version; INSERT INTO schema_version VALUES(%d)",
                 KNOWN_VERSION);
        rc = db_exec(db, sql, err);
    }
    return rc;
}

int store_schema_migrate(struct store *s, struct tide_err *err)
{
    struct db *db = store_db(s);
    int rc = db_begin(db, err);
    if (rc)
        return rc;
    rc = migrate(db, err);
    if (rc) {
        db_rollback(db);
        return rc;
    }
    return db_commit(db, err);
}
