/*
 * The store on SQLite and on PostgreSQL (test_store_target.h): versioned
 * migrations (a new database, a newer one refused, a SQLite file made by
 * tide before schema versions upgraded), the core rows surviving a reopen
 * with ids past 32 bits, a SQLite file held by one process alone (no -shm),
 * leadership (SQLite always grants; on PostgreSQL one
 * store of two leads, the other takes over with the next epoch), and store
 * URLs shown without their password.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "core/job_spec.h"
#include "store/store_db.h"
#include "store/store_events.h"
#include "store/store_health.h"
#include "store/store_lead.h"
#include "store/store_pools.h"
#include "store/store_tokens.h"
#include "store/store_usage.h"
#include "test_store_target.h"

/* The schema version this tide writes (src/store/store_schema.c). */
#define LATEST_VERSION 7
#define LATEST_TEXT "7"

struct fixture {
    struct test_store_target t;
    struct store *s;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    test_store_target_make(&f->t);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    store_close(f->s);
    test_store_target_remove(&f->t);
    free(f);
    return 0;
}

/* The first column of the first row of sql, as an integer. */
static int64_t query_int(struct store *s, const char *sql)
{
    struct tide_err err = {0};
    struct db_stmt *st = db_prepare(store_db(s), sql, &err);
    if (!st)
        fail_msg("%s: %s", sql, err.message);
    int r = db_step(st, "test query", &err);
    if (r != DB_ROW)
        fail_msg("%s: %s", sql, r < 0 ? err.message : "no row");
    int64_t v = db_column_int64(st, 0);
    db_finalize(st);
    return v;
}

static void exec_ok(struct store *s, const char *sql)
{
    struct tide_err err = {0};
    if (db_exec(store_db(s), sql, &err) != 0)
        fail_msg("%s: %s", sql, err.message);
}

static void test_a_new_store_is_at_the_latest_schema_version(void **state)
{
    struct fixture *f = *state;
    f->s = test_store_target_open(&f->t);
    assert_int_equal(query_int(f->s, "SELECT MAX(version) FROM schema_version"), LATEST_VERSION);
    assert_int_equal(query_int(f->s, "SELECT COUNT(*) FROM schema_version"), 1);
    store_close(f->s);
    f->s = test_store_target_open(&f->t); /* opening again changes nothing */
    assert_int_equal(query_int(f->s, "SELECT COUNT(*) FROM schema_version"), 1);
}

static void test_a_database_newer_than_this_tide_is_refused(void **state)
{
    struct fixture *f = *state;
    f->s = test_store_target_open(&f->t);
    exec_ok(f->s, "UPDATE schema_version SET version = 99");
    store_close(f->s);
    f->s = NULL;
    struct tide_err err = {0};
    assert_int_equal(store_open(f->t.path, &f->s, &err), TIDE_EINVAL);
    assert_null(f->s);
    assert_string_equal(err.message,
                        "database schema is version 99, this tide knows up to " LATEST_TEXT
                        ": upgrade tide");
    assert_string_equal(err.field, "store");
}

/* A valid stored spec: job_spec's canonical form of body. */
static json_t *spec_of(const char *body, struct job *job)
{
    json_t *spec = NULL;
    struct tide_err err = {0};
    if (job_spec_parse(body, strlen(body), &spec, job, &err) != 0)
        fail_msg("spec %s: %s", body, err.message);
    return spec;
}

static void test_jobs_nodes_and_tokens_come_back_after_a_reopen_with_big_ids(void **state)
{
    struct fixture *f = *state;
    f->s = test_store_target_open(&f->t);
    /* Ids past 32 bits: the next job gets 5000000000. */
    if (test_store_target_is_pg(&f->t))
        exec_ok(f->s, "ALTER TABLE jobs ALTER COLUMN id RESTART WITH 5000000000");
    else
        exec_ok(f->s, "INSERT INTO jobs(id, name, project, queue, priority, state, reason, spec,"
                      " owner, submit_ms) VALUES(4999999999, 'x', 'p', 'q', 0, 'succeeded', '',"
                      " '{}', 'o', 1)");
    struct node *n = calloc(1, sizeof *n);
    assert_non_null(n);
    snprintf(n->name, sizeof n->name, "node-a");
    n->state = NODE_READY;
    json_t *info =
        json_pack("{s:i, s:i, s:[{s:i, s:s, s:s, s:i}]}", "cpus", 8, "memory_mib", 4096, "gpus",
                  "index", 0, "uuid", "GPU-0", "name", "H200", "memory_total_mib", 1000);
    assert_int_equal(store_node_upsert(f->s, n, info, 1000, NULL), 0);
    json_decref(info);
    struct job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    json_t *spec = spec_of("{\"name\": \"train\", \"command\": [\"true\"], \"gpus\": 1,"
                           " \"project\": \"vision\"}",
                           j);
    int64_t now_ms = 1764680000123LL; /* a time past 32 bits too */
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_job_insert(f->s, j, spec, "alice", now_ms, NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    json_decref(spec);
    assert_int_equal(j->id, 5000000000LL);
    int gpus[] = {0};
    struct job_update u = {.job_id = j->id,
                           .state = JOB_RUNNING,
                           .reason = "placed",
                           .attempt = 1,
                           .node_id = n->id,
                           .gpus = gpus,
                           .ngpus = 1,
                           .exit_code = -2,
                           .signal = -1,
                           .start_ms = now_ms + 5,
                           .end_ms = 0,
                           .cancel_requested = -1};
    assert_int_equal(store_job_update(f->s, &u, NULL), 0);
    assert_int_equal(store_event_add(f->s, now_ms, "job_running", j->id, n->id, "up", NULL), 0);
    json_t *projects = json_pack("[s]", "vision");
    assert_int_equal(
        store_token_put(f->s, "abc123", TOKEN_USER, "alice", projects, 0, now_ms, NULL), 0);
    json_decref(projects);
    assert_int_equal(store_token_set_expiry(f->s, "abc123", now_ms + 1000, NULL), 0);
    store_close(f->s);

    f->s = test_store_target_open(&f->t);
    struct cluster c;
    cluster_init(&c);
    assert_int_equal(store_nodes_load(f->s, &c, now_ms, NULL), 0);
    assert_int_equal(store_jobs_load_active(f->s, &c, NULL), 0);
    struct job *back = cluster_find_job(&c, 5000000000LL);
    assert_non_null(back);
    assert_int_equal(back->state, JOB_RUNNING);
    assert_int_equal(back->submit_ms, now_ms);
    assert_int_equal(back->start_ms, now_ms + 5);
    assert_string_equal(back->project, "vision");
    assert_string_equal(back->user, "alice");
    assert_int_equal(c.nnodes, 1);
    assert_string_equal(c.nodes[0].name, "node-a");
    assert_int_equal(c.nodes[0].ngpus, 1);
    cluster_release(&c);
    json_t *job = NULL;
    assert_int_equal(store_job_get(f->s, 5000000000LL, &job, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(job, "node")), "node-a");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(job, "gpus"), 0)), 0);
    assert_true(json_is_null(json_object_get(job, "exit_code")));
    json_decref(job);
    struct token_info t;
    assert_int_equal(store_token_get(f->s, "abc123", &t, NULL), 0);
    assert_string_equal(t.name, "alice");
    assert_int_equal(t.expires_ms, now_ms + 1000);
    assert_string_equal(json_string_value(json_array_get(t.projects, 0)), "vision");
    token_info_release(&t);
    struct event_filter flt = {0};
    flt.job_id = 5000000000LL;
    json_t *evs = NULL;
    bool more;
    assert_int_equal(store_events_query(f->s, &flt, &evs, &more, NULL), 0);
    assert_int_equal(json_array_size(evs), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "project")),
                        "vision");
    json_decref(evs);
    free(n);
    free(j);
}

/* A node of one GPU called name, stored. */
static struct node *stored_node(struct store *s, const char *name)
{
    struct node *n = calloc(1, sizeof *n);
    assert_non_null(n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->state = NODE_READY;
    json_t *info =
        json_pack("{s:i, s:i, s:[{s:i, s:s, s:s, s:i}]}", "cpus", 8, "memory_mib", 4096, "gpus",
                  "index", 0, "uuid", "GPU-0", "name", "H200", "memory_total_mib", 1000);
    assert_int_equal(store_node_upsert(s, n, info, 1000, NULL), 0);
    json_decref(info);
    return n;
}

/* Opens the store made as an older version has it (what `older` drops
 * from today's schema, at `version`), then again: migrated to today's. */
static void open_as_of(struct fixture *f, const char *older, int version)
{
    f->s = test_store_target_open(&f->t);
    exec_ok(f->s, older);
    char set[64];
    snprintf(set, sizeof set, "UPDATE schema_version SET version = %d", version);
    exec_ok(f->s, set);
    store_close(f->s);
    f->s = test_store_target_open(&f->t);
    assert_int_equal(query_int(f->s, "SELECT MAX(version) FROM schema_version"), LATEST_VERSION);
}

static void test_a_jobs_lost_attempts_and_restart_wait_come_back_after_a_reopen(void **state)
{
    struct fixture *f = *state;
    open_as_of(f, "ALTER TABLE jobs DROP COLUMN lost_attempts;"
                  "ALTER TABLE jobs DROP COLUMN restart_after_ms", 4);
    struct job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    json_t *spec = spec_of("{\"command\": [\"true\"], \"gpus\": 1}", j);
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_job_insert(f->s, j, spec, "alice", 1000, NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    json_decref(spec);
    assert_int_equal(store_job_count_attempt(f->s, j->id, true, 1, NULL), 0);
    assert_int_equal(store_job_count_attempt(f->s, j->id, true, 0, NULL), 0); /* preempted */
    assert_int_equal(store_job_count_attempt(f->s, j->id, false, 0, NULL), 0); /* retried */
    assert_int_equal(store_job_count_attempt(f->s, j->id, true, 1, NULL), 0);
    assert_int_equal(store_job_set_restart_after(f->s, j->id, 5000, NULL), 0);
    store_close(f->s);
    f->s = test_store_target_open(&f->t);
    struct cluster c;
    cluster_init(&c);
    assert_int_equal(store_jobs_load_active(f->s, &c, NULL), 0);
    struct job *back = cluster_find_job(&c, j->id);
    assert_non_null(back);
    assert_int_equal(back->free_attempts, 3);
    assert_int_equal(back->lost_attempts, 1); /* the last count kept, not a sum */
    assert_int_equal(back->restart_after_ms, 5000);
    cluster_release(&c);
    free(j);
}

/* A GPU's fault count comes back with the agent run it counts in: the
 * server starts the count again only for another run. */
static void test_a_gpus_fault_count_and_its_agent_run_come_back_after_a_reopen(void **state)
{
    struct fixture *f = *state;
    open_as_of(f, "ALTER TABLE gpu_faults DROP COLUMN seq_run", 5);
    struct node n;
    memset(&n, 0, sizeof n);
    snprintf(n.name, sizeof n.name, "gpu-node");
    n.ngpus = 2;
    n.gpus[1].index = 1;
    n.gpus[0].index = 0;
    n.gpus[0].faulty = true;
    snprintf(n.gpus[0].fault, sizeof n.gpus[0].fault, "xid 79");
    n.gpus[0].fault_seq = 3;
    snprintf(n.gpus[0].fault_run, sizeof n.gpus[0].fault_run, "9f3c0a12b4e5d6f7");
    json_t *info = json_pack("{s:i, s:[{s:i}, {s:i}]}", "cpus", 4, "gpus", "index", 0, "index", 1);
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_node_upsert(f->s, &n, info, 1000, NULL), 0);
    assert_int_equal(store_gpu_faults_save(f->s, &n, NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    json_decref(info);
    store_close(f->s);
    f->s = test_store_target_open(&f->t);
    struct cluster c;
    cluster_init(&c);
    assert_int_equal(store_nodes_load(f->s, &c, 2000, NULL), 0);
    assert_int_equal(store_gpu_faults_load(f->s, &c, NULL), 0);
    struct node *back = cluster_find_node(&c, n.id);
    assert_non_null(back);
    assert_true(back->gpus[0].faulty);
    assert_int_equal(back->gpus[0].fault_seq, 3);
    assert_string_equal(back->gpus[0].fault_run, "9f3c0a12b4e5d6f7");
    assert_false(back->gpus[1].faulty);
    assert_string_equal(back->gpus[1].fault_run, "");
    cluster_release(&c);
}

/* A node's faults counted towards node_fault_limit, and a failed mark,
 * come back; a deleted node's do not, nor its GPUs' faults. */
static void test_a_nodes_fault_count_comes_back_after_a_reopen_until_it_is_deleted(void **state)
{
    struct fixture *f = *state;
    open_as_of(f, "DROP TABLE node_faults", 6);
    struct node n;
    memset(&n, 0, sizeof n);
    snprintf(n.name, sizeof n.name, "gpu-node");
    n.ngpus = 1;
    n.gpus[0].faulty = true;
    n.faults_in_window = 2;
    n.fault_window_start_ms = 5000;
    n.health_failed = true;
    json_t *info = json_pack("{s:i, s:[{s:i}]}", "cpus", 4, "gpus", "index", 0);
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_node_upsert(f->s, &n, info, 1000, NULL), 0);
    assert_int_equal(store_gpu_faults_save(f->s, &n, NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    store_close(f->s);
    f->s = test_store_target_open(&f->t);
    struct cluster c;
    cluster_init(&c);
    assert_int_equal(store_nodes_load(f->s, &c, 2000, NULL), 0);
    assert_int_equal(store_gpu_faults_load(f->s, &c, NULL), 0);
    struct node *back = cluster_find_node(&c, n.id);
    assert_non_null(back);
    assert_int_equal(back->faults_in_window, 2);
    assert_int_equal(back->fault_window_start_ms, 5000);
    assert_true(back->health_failed);
    cluster_release(&c);
    /* deleted, then its name registered again: a healthy node */
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_node_delete(f->s, n.id, NULL), 0);
    n.state = NODE_READY;
    assert_int_equal(store_node_upsert(f->s, &n, info, 3000, NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    json_decref(info);
    cluster_init(&c);
    assert_int_equal(store_nodes_load(f->s, &c, 4000, NULL), 0);
    assert_int_equal(store_gpu_faults_load(f->s, &c, NULL), 0);
    back = cluster_find_node(&c, n.id);
    assert_non_null(back);
    assert_int_equal(back->faults_in_window, 0);
    assert_false(back->health_failed);
    assert_false(back->gpus[0].faulty);
    cluster_release(&c);
}

static void test_a_gangs_ended_parts_and_first_failure_come_back_after_a_reopen(void **state)
{
    struct fixture *f = *state;
    open_as_of(f, "ALTER TABLE jobs DROP COLUMN gang", 3); /* no gang column */
    struct node *a = stored_node(f->s, "node-a"), *b = stored_node(f->s, "node-b"),
                *d = stored_node(f->s, "node-d");
    struct job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    json_t *spec = spec_of("{\"name\": \"mpi\", \"command\": [\"true\"], \"gpus\": 3,"
                           " \"nodes\": 3}",
                           j);
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_job_insert(f->s, j, spec, "alice", 1000, NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    json_decref(spec);
    int gpus[] = {0};
    json_t *parts = json_pack("[[I, [i]], [I, [i]]]", (json_int_t)b->id, 0, (json_int_t)d->id, 0);
    struct job_update u = {.job_id = j->id, .state = JOB_RUNNING, .reason = "placed",
                           .attempt = 1, .node_id = a->id, .gpus = gpus, .ngpus = 1,
                           .exit_code = -2, .signal = -1, .start_ms = 2000,
                           .cancel_requested = -1, .parts = parts};
    assert_int_equal(store_job_update(f->s, &u, NULL), 0);
    /* node-b's part failed (exit 3) while the others run */
    struct cluster c;
    cluster_init(&c);
    assert_int_equal(store_nodes_load(f->s, &c, 3000, NULL), 0);
    assert_int_equal(store_jobs_load_active(f->s, &c, NULL), 0);
    struct job *live = cluster_find_job(&c, j->id);
    assert_non_null(live);
    assert_int_equal(live->nparts, 2);
    assert_false(job_mark_part_exited(live, b->id));
    live->gang_failed = true;
    live->gang_exit_code = 3;
    snprintf(live->gang_reason, sizeof live->gang_reason, "exit 3");
    assert_int_equal(store_job_gang_save(f->s, live, NULL), 0);
    cluster_release(&c);
    store_close(f->s);

    f->s = test_store_target_open(&f->t);
    cluster_init(&c);
    assert_int_equal(store_nodes_load(f->s, &c, 4000, NULL), 0);
    assert_int_equal(store_jobs_load_active(f->s, &c, NULL), 0);
    struct job *back = cluster_find_job(&c, j->id);
    assert_non_null(back);
    assert_true(job_part_exited(back, b->id));
    assert_false(job_part_exited(back, a->id));
    assert_false(job_part_exited(back, d->id));
    assert_true(back->gang_failed);
    assert_int_equal(back->gang_exit_code, 3);
    assert_string_equal(back->gang_reason, "exit 3");
    cluster_release(&c);
    /* a new placement starts with no part ended */
    u.attempt = 2;
    assert_int_equal(store_job_update(f->s, &u, NULL), 0);
    cluster_init(&c);
    assert_int_equal(store_nodes_load(f->s, &c, 4000, NULL), 0);
    assert_int_equal(store_jobs_load_active(f->s, &c, NULL), 0);
    back = cluster_find_job(&c, j->id);
    assert_false(job_part_exited(back, b->id));
    assert_false(back->gang_failed);
    cluster_release(&c);
    json_decref(parts);
    free(a);
    free(b);
    free(d);
    free(j);
}

/* 1 when the store's database has an index of that name, else 0. */
static int64_t has_index(struct store *s, bool pg, const char *name)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             pg ? "SELECT COUNT(*) FROM pg_indexes WHERE indexname = '%s'"
                : "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = '%s'",
             name);
    return query_int(s, sql);
}

/* Version 1's indexes, as a database at version 1 has them. */
static const char v1_job_and_event_indexes[] =
    "DROP INDEX jobs_ended_by_end; DROP INDEX events_with_node; DROP INDEX events_with_pool;"
    "CREATE INDEX jobs_by_state ON jobs(state);"
    "CREATE INDEX jobs_by_project ON jobs(project);"
    "CREATE INDEX jobs_by_end ON jobs(end_ms);"
    "CREATE INDEX events_by_node ON events(node);"
    "CREATE INDEX events_by_pool ON events(pool);"
    "UPDATE schema_version SET version = 1";

static void test_a_version_1_database_upgrades_to_fewer_job_and_event_indexes(void **state)
{
    struct fixture *f = *state;
    bool pg = test_store_target_is_pg(&f->t);
    f->s = test_store_target_open(&f->t);
    exec_ok(f->s, v1_job_and_event_indexes);
    int64_t id = test_store_add_job(f->s, "vision");
    assert_int_equal(store_event_add_in(f->s, 5000, "job_starting", id, 0, "elastic", NULL,
                                        "placed", NULL),
                     0);
    store_close(f->s);

    f->s = test_store_target_open(&f->t);
    assert_int_equal(query_int(f->s, "SELECT MAX(version) FROM schema_version"), LATEST_VERSION);
    const char *gone[] = {"jobs_by_state",  "jobs_by_project", "jobs_by_end",      "events_by_node",
                          "events_by_pool", "events_by_time",  "events_by_project"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        if (has_index(f->s, pg, gone[i]))
            fail_msg("index %s is still there", gone[i]);
    const char *kept[] = {"jobs_ended_by_end", "events_with_node", "events_with_pool",
                          "events_by_job"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (!has_index(f->s, pg, kept[i]))
            fail_msg("index %s is missing", kept[i]);
    /* The rows are still there and the filters the indexes serve still find them. */
    struct event_filter flt = {0};
    flt.pool = "elastic";
    flt.project = "vision";
    json_t *evs = NULL;
    bool more;
    assert_int_equal(store_events_query(f->s, &flt, &evs, &more, NULL), 0);
    assert_int_equal(json_array_size(evs), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 0), "job_id")), id);
    json_decref(evs);
    json_t *job = NULL;
    assert_int_equal(store_job_get(f->s, id, &job, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(job, "project")), "vision");
    json_decref(job);
}

/* The ids of the events flt lists, as "1,2,3" (at most size bytes). */
static void listed_ids(struct store *s, const struct event_filter *flt, char *out, size_t size)
{
    json_t *evs = NULL;
    bool more;
    struct tide_err err = {0};
    if (store_events_query(s, flt, &evs, &more, &err) != 0)
        fail_msg("list events: %s", err.message);
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(evs) && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%lld", i ? "," : "",
                              (long long)json_integer_value(
                                  json_object_get(json_array_get(evs, i), "id")));
    json_decref(evs);
}

/* Version 2 as a database at version 2 has it: the event time and project indexes. */
static const char v2_event_indexes[] =
    "CREATE INDEX events_by_project ON events(project);"
    "CREATE INDEX events_by_time ON events(time_ms);"
    "UPDATE schema_version SET version = 2";

static void test_a_version_2_database_loses_the_event_time_and_project_indexes(void **state)
{
    struct fixture *f = *state;
    bool pg = test_store_target_is_pg(&f->t);
    f->s = test_store_target_open(&f->t);
    exec_ok(f->s, v2_event_indexes);
    int64_t vision = test_store_add_job(f->s, "vision");
    int64_t speech = test_store_add_job(f->s, "speech");
    /* Times not in id order at the edges: the filters still compare each row's time. */
    const struct {
        int64_t time, job;
    } adds[] = {{3000, vision}, {1000, speech}, {2000, vision}, {5000, speech}, {4000, vision}};
    int64_t ids[5];
    for (int i = 0; i < 5; i++) {
        assert_int_equal(store_event_add(f->s, adds[i].time, "job_running", adds[i].job, 0,
                                         "running", NULL),
                         0);
        ids[i] = query_int(f->s, "SELECT MAX(id) FROM events");
    }
    store_close(f->s);

    f->s = test_store_target_open(&f->t);
    assert_int_equal(query_int(f->s, "SELECT MAX(version) FROM schema_version"), LATEST_VERSION);
    assert_int_equal(has_index(f->s, pg, "events_by_time"), 0);
    assert_int_equal(has_index(f->s, pg, "events_by_project"), 0);
    assert_int_equal(has_index(f->s, pg, "events_by_job"), 1);
    char got[128], want[128];
    struct event_filter flt = {0};
    flt.from_ms = 2000;
    flt.to_ms = 5000;
    listed_ids(f->s, &flt, got, sizeof got);
    snprintf(want, sizeof want, "%lld,%lld,%lld", (long long)ids[0], (long long)ids[2],
             (long long)ids[4]);
    assert_string_equal(got, want);
    memset(&flt, 0, sizeof flt);
    flt.project = "vision";
    flt.tail = 2;
    listed_ids(f->s, &flt, got, sizeof got);
    snprintf(want, sizeof want, "%lld,%lld", (long long)ids[2], (long long)ids[4]);
    assert_string_equal(got, want);
    memset(&flt, 0, sizeof flt);
    flt.projects = json_pack("[s]", "speech"); /* a project-limited token */
    flt.to_ms = 5000;
    listed_ids(f->s, &flt, got, sizeof got);
    json_decref(flt.projects);
    snprintf(want, sizeof want, "%lld", (long long)ids[1]);
    assert_string_equal(got, want);
}

/* What tide made before schema versions: its CREATE TABLE IF NOT EXISTS
 * statements, as the oldest of them stood (no columns added since). */
static const char old_tables[] =
    "CREATE TABLE tokens(hash TEXT PRIMARY KEY, kind INTEGER NOT NULL,"
    "  name TEXT NOT NULL, projects TEXT, node_id INTEGER, created_ms INTEGER NOT NULL);"
    "CREATE TABLE nodes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    "  state TEXT NOT NULL, info TEXT NOT NULL, registered_ms INTEGER NOT NULL);"
    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    "  project TEXT NOT NULL, queue TEXT NOT NULL, priority INTEGER NOT NULL,"
    "  state TEXT NOT NULL, reason TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,"
    "  spec TEXT NOT NULL, owner TEXT NOT NULL, node_id INTEGER, gpus TEXT,"
    "  exit_code INTEGER, signal INTEGER, cancel_requested INTEGER NOT NULL DEFAULT 0,"
    "  submit_ms INTEGER NOT NULL, start_ms INTEGER, end_ms INTEGER);"
    "CREATE INDEX jobs_by_state ON jobs(state);"
    "CREATE INDEX jobs_by_project ON jobs(project);"
    "CREATE TABLE pool_nodes(node_id INTEGER PRIMARY KEY, pool TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL, ready_ms INTEGER, ended_ms INTEGER, provider_id TEXT);"
    "CREATE TABLE pool_meters(pool TEXT NOT NULL, project TEXT NOT NULL,"
    "  node_ms INTEGER NOT NULL, gpu_ms INTEGER NOT NULL, PRIMARY KEY(pool, project));"
    "CREATE TABLE budget_state(project TEXT NOT NULL, period_kind INTEGER NOT NULL,"
    "  period INTEGER NOT NULL, spent_micros INTEGER NOT NULL, spent_rem INTEGER NOT NULL,"
    "  alerted_pct INTEGER NOT NULL, PRIMARY KEY(project, period_kind));"
    "CREATE TABLE events(id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL,"
    "  kind TEXT NOT NULL, job_id INTEGER, node_id INTEGER, message TEXT NOT NULL);"
    "CREATE TABLE idempotency(owner TEXT NOT NULL, key TEXT NOT NULL,"
    "  request_hash TEXT NOT NULL, job_ids TEXT NOT NULL, created_ms INTEGER NOT NULL,"
    "  PRIMARY KEY(owner, key));"
    "CREATE TABLE usage_pool_days(day INTEGER NOT NULL, pool TEXT NOT NULL,"
    "  node_ms INTEGER NOT NULL, gpu_ms INTEGER NOT NULL, PRIMARY KEY(day, pool));"
    "CREATE TABLE usage_uses(day INTEGER NOT NULL, pool TEXT NOT NULL,"
    "  project TEXT NOT NULL, queue TEXT NOT NULL, gpu_ms INTEGER NOT NULL,"
    "  PRIMARY KEY(day, pool, project, queue));";

/* ... and what the current main added at each start since: its ALTER TABLE
 * calls, the events' columns and the newer tables. */
static const char main_additions[] =
    "ALTER TABLE jobs ADD COLUMN parts TEXT;"
    "ALTER TABLE jobs ADD COLUMN hold_reason TEXT;"
    "ALTER TABLE nodes ADD COLUMN drain_reason TEXT;"
    "ALTER TABLE jobs ADD COLUMN free_attempts INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE pool_nodes ADD COLUMN interrupt_deadline_ms INTEGER;"
    "ALTER TABLE tokens ADD COLUMN expires_ms INTEGER;"
    "CREATE INDEX tokens_by_name ON tokens(name);"
    "ALTER TABLE events ADD COLUMN node TEXT;"
    "ALTER TABLE events ADD COLUMN pool TEXT;"
    "ALTER TABLE events ADD COLUMN project TEXT;"
    "UPDATE events SET node = (SELECT name FROM nodes WHERE id = events.node_id),"
    "  pool = (SELECT pool FROM pool_nodes WHERE node_id = events.node_id),"
    "  project = (SELECT project FROM jobs WHERE id = events.job_id);"
    "CREATE INDEX events_by_job ON events(job_id);"
    "CREATE INDEX events_by_node ON events(node);"
    "CREATE INDEX events_by_pool ON events(pool);"
    "CREATE INDEX events_by_project ON events(project);"
    "CREATE INDEX events_by_time ON events(time_ms);"
    "CREATE INDEX idempotency_by_age ON idempotency(created_ms);"
    "CREATE TABLE gpu_faults(node_id INTEGER NOT NULL,"
    "  gpu_index INTEGER NOT NULL, faulty INTEGER NOT NULL, fault TEXT,"
    "  seq INTEGER NOT NULL, PRIMARY KEY(node_id, gpu_index));"
    "CREATE INDEX jobs_by_end ON jobs(end_ms);"
    "CREATE TABLE usage_uses_by_user(day INTEGER NOT NULL, pool TEXT NOT NULL,"
    "  project TEXT NOT NULL, queue TEXT NOT NULL, user TEXT NOT NULL DEFAULT '',"
    "  gpu_ms INTEGER NOT NULL, PRIMARY KEY(day, pool, project, queue, user));"
    "INSERT INTO usage_uses_by_user SELECT day, pool, project, queue, '', gpu_ms FROM usage_uses;"
    "DROP TABLE usage_uses;"
    "ALTER TABLE usage_uses_by_user RENAME TO usage_uses;"
    "CREATE TABLE leader(id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  epoch INTEGER NOT NULL, url TEXT NOT NULL, since_ms INTEGER NOT NULL);";

/* A node, a pool node, a job on it, a token, an event and usage, as the
 * old tables hold them. */
static const char old_rows[] =
    "INSERT INTO nodes(id, name, state, info, registered_ms) VALUES(3, 'old-node', 'ready',"
    "  '{\"cpus\": 4, \"gpus\": [{\"index\": 0, \"name\": \"H200\"}]}', 10);"
    "INSERT INTO pool_nodes(node_id, pool, created_ms) VALUES(3, 'elastic', 10);"
    "INSERT INTO jobs(id, name, project, queue, priority, state, reason, spec, owner, node_id,"
    "  gpus, submit_ms, start_ms) VALUES(41, 'old', 'speech', 'default', 0, 'running', 'placed',"
    "  '{\"name\": \"old\", \"command\": [\"true\"], \"gpus\": 1, \"project\": \"speech\"}',"
    "  'bob', 3, '[0]', 20, 30);"
    "INSERT INTO tokens(hash, kind, name, projects, created_ms) VALUES('h1', 1, 'bob', NULL, 5);"
    "INSERT INTO events(time_ms, kind, job_id, node_id, message) VALUES(30, 'job_running', 41, 3,"
    "  'up');"
    "INSERT INTO usage_pool_days(day, pool, node_ms, gpu_ms) VALUES(20000, 'elastic', 7, 9);";

/* Makes the SQLite file at path as tide made it before versions: the old
 * tables with their rows, then (with_main) main's additions at a start. */
static void make_old_database(const char *path, bool with_main)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, old_tables, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, old_rows, NULL, NULL, &msg) != SQLITE_OK ||
        (with_main && sqlite3_exec(db, main_additions, NULL, NULL, &msg) != SQLITE_OK))
        fail_msg("old database: %s", msg);
    sqlite3_close(db);
}

/* The old rows read back through the store, and new rows written. */
static void check_upgraded(struct store *s)
{
    assert_int_equal(query_int(s, "SELECT MAX(version) FROM schema_version"), LATEST_VERSION);
    struct cluster c;
    cluster_init(&c);
    assert_int_equal(store_nodes_load(s, &c, 100, NULL), 0);
    assert_int_equal(store_pool_nodes_load(s, &c, NULL, NULL, NULL), 0);
    assert_int_equal(store_gpu_faults_load(s, &c, NULL), 0);
    assert_int_equal(store_jobs_load_active(s, &c, NULL), 0);
    struct job *job = cluster_find_job(&c, 41);
    assert_non_null(job);
    assert_int_equal(job->state, JOB_RUNNING);
    assert_string_equal(c.nodes[0].pool, "elastic");
    cluster_release(&c);
    /* The old event got its node, pool and project from the rows it names. */
    struct event_filter flt = {0};
    flt.project = "speech";
    flt.pool = "elastic";
    flt.node = "old-node";
    json_t *evs = NULL;
    bool more;
    assert_int_equal(store_events_query(s, &flt, &evs, &more, NULL), 0);
    assert_int_equal(json_array_size(evs), 1);
    json_decref(evs);
    /* Columns that came later work on the old rows. */
    assert_int_equal(store_job_set_hold(s, 41, "wait", NULL), 0);
    assert_int_equal(store_job_count_attempt(s, 41, true, 1, NULL), 0);
    assert_int_equal(store_node_set_drain(s, 3, NODE_READY, "fix", NULL), 0);
    assert_int_equal(store_token_set_expiry(s, "h1", 99, NULL), 0);
    struct token_info t;
    assert_int_equal(store_token_get(s, "h1", &t, NULL), 0);
    assert_int_equal(t.expires_ms, 99);
    token_info_release(&t);
    assert_int_equal(query_int(s, "SELECT free_attempts FROM jobs WHERE id = 41"), 1);
    assert_int_equal(query_int(s, "SELECT lost_attempts FROM jobs WHERE id = 41"), 1);
    assert_int_equal(query_int(s, "SELECT COUNT(*) FROM usage_uses WHERE \"user\" = ''"), 0);
    /* New ids follow the old ones. */
    struct job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    json_t *spec = spec_of("{\"command\": [\"true\"], \"gpus\": 1}", j);
    assert_int_equal(store_job_insert(s, j, spec, "carol", 200, NULL), 0);
    assert_int_equal(j->id, 42);
    json_decref(spec);
    free(j);
}

static void test_a_sqlite_database_made_by_tide_before_versions_upgrades(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip();
    make_old_database(f->t.path, true);
    f->s = test_store_target_open(&f->t);
    check_upgraded(f->s);
    store_close(f->s);
    f->s = test_store_target_open(&f->t); /* a second start changes nothing */
    assert_int_equal(query_int(f->s, "SELECT hold_reason IS NOT NULL FROM jobs WHERE id = 41"), 1);
}

static void test_a_sqlite_database_from_before_the_added_columns_upgrades(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip();
    make_old_database(f->t.path, false);
    f->s = test_store_target_open(&f->t);
    check_upgraded(f->s);
}

/* Commits jobs into the store at path until killed: one job a transaction,
 * and every 5th transaction 60 jobs with 4 KiB specs (more than the WAL
 * writes gathered at once); after each commit, the number of jobs committed
 * so far on a line on stdout. Run by this binary's `--commit-jobs PATH`. */
static int commit_jobs_main(const char *path)
{
    struct store *s = NULL;
    struct tide_err err = {0};
    if (store_open(path, &s, &err) != 0)
        return 2;
    char big[4096];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (long total = 0, round = 1;; round++) {
        int n = round % 5 ? 1 : 60;
        if (store_begin(s, &err) != 0)
            return 3;
        for (int i = 0; i < n; i++) {
            struct job j;
            memset(&j, 0, sizeof j);
            snprintf(j.project, sizeof j.project, "p");
            snprintf(j.queue, sizeof j.queue, "default");
            json_t *spec = json_pack("{s:s, s:s}", "name", "t", "pad", n > 1 ? big : "");
            if (store_job_insert(s, &j, spec, "tester", 1000, &err) != 0)
                return 4;
            json_decref(spec);
        }
        if (store_commit(s, &err) != 0)
            return 5;
        total += n;
        printf("%ld\n", total);
        fflush(stdout);
    }
}

/* Counts jobs in path with SQLite's default VFS, as a sqlite3 shell would,
 * and exits with the count, 255 when the file is locked (SQLITE_BUSY), 254
 * on any other failure: run by this binary's `--count-jobs PATH`. */
static int count_jobs_main(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int code = 254;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM jobs", -1, &st, NULL) == SQLITE_OK) {
        int r = sqlite3_step(st);
        code = r == SQLITE_ROW ? (int)sqlite3_column_int64(st, 0) : r == SQLITE_BUSY ? 255 : 254;
    } else if (db && sqlite3_errcode(db) == SQLITE_BUSY) {
        code = 255;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return code;
}

/* The jobs another process counts in path: -1 when it finds the file
 * locked, -2 on any other failure. A new program, not a fork: a forked
 * child would inherit this process's SQLite lock bookkeeping. */
static int count_jobs_elsewhere(const char *path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_store_schema", "--count-jobs", path, (char *)NULL);
        _exit(253);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    int code = WEXITSTATUS(status);
    assert_int_not_equal(code, 253);
    return code == 255 ? -1 : code == 254 ? -2 : code;
}

static void test_a_sqlite_store_holds_its_file_alone_and_keeps_no_shared_index(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip();
    char shm[1100];
    snprintf(shm, sizeof shm, "%s-shm", f->t.path);
    f->s = test_store_target_open(&f->t);
    store_close(f->s);
    /* An older tide's WAL index, left by a kill -9: never read, removed at open. */
    FILE *old = fopen(shm, "w");
    assert_non_null(old);
    fputs("not a WAL index", old);
    fclose(old);
    f->s = test_store_target_open(&f->t);
    test_store_add_job(f->s, "vision");
    struct stat st;
    assert_int_equal(stat(shm, &st), -1);
    assert_int_equal(count_jobs_elsewhere(f->t.path), -1);
    /* The store's own events reader still reads alongside its writer. */
    assert_int_equal(store_event_add(f->s, 5, "job_running", 0, 0, "seen", NULL), 0);
    struct event_filter flt = {0};
    json_t *evs = NULL;
    bool more = true;
    assert_int_equal(store_events_query(f->s, &flt, &evs, &more, NULL), 0);
    assert_int_equal(json_array_size(evs), 1);
    assert_false(more);
    json_decref(evs);
    store_close(f->s);
    f->s = NULL;
    assert_int_equal(count_jobs_elsewhere(f->t.path), 1);
}

/* kill -9 between and during commits: every commit acknowledged is there,
 * and the file is whole (the WAL's writes are gathered until each commit's
 * sync, so a kill loses at most the transaction not yet acknowledged). */
static void test_a_sqlite_store_killed_mid_writes_keeps_every_acknowledged_commit(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip();
    for (int kill_after = 7; kill_after <= 47; kill_after += 20) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
            execl("/proc/self/exe", "test_store_schema", "--commit-jobs", f->t.path, (char *)NULL);
            _exit(253);
        }
        close(fds[1]);
        FILE *acks = fdopen(fds[0], "r");
        assert_non_null(acks);
        long acked = 0, total;
        for (int i = 0; i < kill_after && fscanf(acks, "%ld", &total) == 1; i++)
            acked = total;
        assert_int_equal(kill(pid, SIGKILL), 0);
        while (fscanf(acks, "%ld", &total) == 1) /* sent before the kill */
            acked = total;
        fclose(acks);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_true(acked > 0);
        f->s = test_store_target_open(&f->t);
        int64_t jobs = query_int(f->s, "SELECT COUNT(*) FROM jobs");
        if (jobs < acked)
            fail_msg("%lld jobs after the kill, %ld were acknowledged", (long long)jobs, acked);
        struct tide_err err = {0};
        struct db_stmt *st = db_prepare(store_db(f->s), "PRAGMA integrity_check", &err);
        assert_non_null(st);
        assert_int_equal(db_step(st, "check", &err), DB_ROW);
        assert_string_equal(db_column_text(st, 0), "ok");
        db_finalize(st);
        exec_ok(f->s, "DELETE FROM jobs");
        store_close(f->s);
        f->s = NULL;
    }
}

static void test_sqlite_always_grants_leadership_with_a_new_epoch(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip();
    f->s = test_store_target_open(&f->t);
    struct store_leader who;
    struct tide_err err = {0};
    assert_int_equal(store_leader_get(f->s, &who, &err), TIDE_ENOENT);
    int64_t epoch = 0;
    assert_int_equal(store_try_lead(f->s, "http://a:1", 10, &epoch, NULL), 1);
    assert_int_equal(epoch, 1);
    assert_int_equal(store_try_lead(f->s, "http://a:2", 20, &epoch, NULL), 1);
    assert_int_equal(epoch, 2);
    assert_int_equal(store_leader_get(f->s, &who, NULL), 0);
    assert_string_equal(who.url, "http://a:2");
    assert_int_equal(who.since_ms, 20);
    assert_false(store_lead_lost(f->s));
}

/* store_try_lead until it grants (a closed session's lock goes when its
 * server process has ended, just after the close). */
static int64_t lead_when_free(struct store *s, const char *url)
{
    int64_t epoch = 0;
    for (int i = 0; i < 200; i++) {
        int r = store_try_lead(s, url, 1000 + i, &epoch, NULL);
        assert_true(r >= 0);
        if (r == 1)
            return epoch;
        usleep(50 * 1000);
    }
    fail_msg("the leader lock never came free");
    return 0;
}

static void test_two_stores_on_one_postgres_lead_one_at_a_time(void **state)
{
    struct fixture *f = *state;
    if (!test_store_target_is_pg(&f->t))
        skip();
    f->s = test_store_target_open(&f->t);
    struct store *other = test_store_target_open(&f->t);
    int64_t epoch = 0, other_epoch = 0;
    assert_int_equal(store_try_lead(f->s, "http://first:8080", 100, &epoch, NULL), 1);
    assert_int_equal(epoch, 1);
    assert_int_equal(store_try_lead(other, "http://second:8080", 200, &other_epoch, NULL), 0);
    struct store_leader who;
    assert_int_equal(store_leader_get(other, &who, NULL), 0); /* a follower reads who leads */
    assert_int_equal(who.epoch, 1);
    assert_string_equal(who.url, "http://first:8080");
    assert_int_equal(who.since_ms, 100);
    assert_false(store_lead_lost(f->s));
    store_close(f->s);
    f->s = NULL;
    assert_int_equal(lead_when_free(other, "http://second:8080"), 2);
    assert_int_equal(store_leader_get(other, &who, NULL), 0);
    assert_string_equal(who.url, "http://second:8080");
    store_close(other);
}

static void test_a_postgres_leader_that_loses_its_connection_knows_it(void **state)
{
    struct fixture *f = *state;
    if (!test_store_target_is_pg(&f->t))
        skip();
    f->s = test_store_target_open(&f->t);
    struct store *other = test_store_target_open(&f->t);
    int64_t epoch = 0;
    assert_int_equal(store_try_lead(f->s, "http://first:8080", 100, &epoch, NULL), 1);
    int64_t pid = query_int(f->s, "SELECT pg_backend_pid()");
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%lld)", (long long)pid);
    assert_int_equal(query_int(other, "SELECT 1"), 1);
    exec_ok(other, sql);
    /* The next write fails, and from then on the store says so and stays down. */
    struct tide_err err = {0};
    assert_int_not_equal(store_node_set_state(f->s, 1, NODE_READY, &err), 0);
    assert_true(store_lead_lost(f->s));
    assert_int_not_equal(store_begin(f->s, &err), 0);
    assert_true(store_lead_lost(f->s));
    int64_t again = 0;
    assert_true(store_try_lead(f->s, "http://first:8080", 300, &again, &err) < 0);
    assert_non_null(strstr(err.message, "not reopened"));
    assert_true(store_lead_lost(f->s));
    assert_int_equal(lead_when_free(other, "http://second:8080"), 2);
    assert_false(store_lead_lost(other));
    store_close(other);
}

static void test_a_postgres_follower_that_loses_its_connection_comes_back(void **state)
{
    struct fixture *f = *state;
    if (!test_store_target_is_pg(&f->t))
        skip();
    f->s = test_store_target_open(&f->t);
    struct store *other = test_store_target_open(&f->t);
    int64_t epoch = 0;
    assert_int_equal(store_try_lead(f->s, "http://first:8080", 100, &epoch, NULL), 1);
    assert_int_equal(store_try_lead(other, "http://second:8080", 100, &epoch, NULL), 0);
    /* The follower's write session is ended from outside. */
    char sql[96];
    int64_t other_pid = query_int(other, "SELECT pg_backend_pid()");
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%lld)", (long long)other_pid);
    exec_ok(f->s, sql);
    struct tide_err err = {0};
    assert_int_not_equal(store_node_set_state(other, 1, NODE_READY, &err), 0);
    assert_true(store_lead_lost(other));
    /* Trying to lead reconnects it: still a follower, and working again. */
    assert_int_equal(store_try_lead(other, "http://second:8080", 200, &epoch, &err), 0);
    assert_false(store_lead_lost(other));
    struct store_leader who;
    assert_int_equal(store_leader_get(other, &who, NULL), 0);
    assert_string_equal(who.url, "http://first:8080");
    struct event_filter flt = {0};
    json_t *evs = NULL;
    bool more;
    assert_int_equal(store_events_query(other, &flt, &evs, &more, NULL), 0);
    json_decref(evs);
    store_close(other);
}

/* PostgreSQL turns the COMMIT of a transaction an error aborted into a
 * ROLLBACK: the store must not report it as committed. */
static void test_a_postgres_commit_after_a_failed_statement_fails(void **state)
{
    struct fixture *f = *state;
    if (!test_store_target_is_pg(&f->t))
        skip();
    f->s = test_store_target_open(&f->t);
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_token_put(f->s, "h", TOKEN_USER, "u", NULL, 0, 1, NULL), 0);
    struct tide_err err = {0};
    assert_int_not_equal(db_exec(store_db(f->s), "SELECT * FROM no_such_table", &err), 0);
    assert_int_equal(store_commit(f->s, &err), TIDE_EIO);
    assert_non_null(strstr(err.message, "rolled back"));
    struct token_info t;
    assert_int_equal(store_token_get(f->s, "h", &t, NULL), TIDE_ENOENT);
}

static void test_a_store_url_is_shown_without_its_password(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"postgres://tide:hunter2@db.example:5432/tide",
         "postgres://tide:***@db.example:5432/tide"},
        {"postgresql://tide@db/tide?sslmode=require&password=hunter2&x=1",
         "postgresql://tide@db/tide?sslmode=require&password=***&x=1"},
        {"postgres://db/tide", "postgres://db/tide"},
        {"/var/lib/tide/tide.db", "/var/lib/tide/tide.db"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char shown[256];
        store_url_shown(cases[i][0], shown, sizeof shown);
        assert_string_equal(shown, cases[i][1]);
    }
    assert_true(store_is_url("postgresql://x/y"));
    assert_false(store_is_url("postgres.db"));
}

static void test_an_unreachable_database_is_named_without_its_password(void **state)
{
    (void)state;
    struct store *s = NULL;
    struct tide_err err = {0};
    assert_int_equal(store_open("postgres://tide:hunter2@127.0.0.1:1/none", &s, &err), TIDE_EIO);
    assert_null(s);
    assert_non_null(strstr(err.message, "postgres://tide:***@127.0.0.1:1/none"));
    assert_null(strstr(err.message, "hunter2"));
    assert_int_equal(store_open("postgres://[broken", &s, &err), TIDE_EIO);
    assert_non_null(strstr(err.message, "postgres://[broken"));
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--count-jobs"))
        return count_jobs_main(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--commit-jobs"))
        return commit_jobs_main(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_new_store_is_at_the_latest_schema_version, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_database_newer_than_this_tide_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_jobs_nodes_and_tokens_come_back_after_a_reopen_with_big_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_version_1_database_upgrades_to_fewer_job_and_event_indexes, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_version_2_database_loses_the_event_time_and_project_indexes, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_sqlite_database_made_by_tide_before_versions_upgrades, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_sqlite_database_from_before_the_added_columns_upgrades, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_sqlite_store_holds_its_file_alone_and_keeps_no_shared_index, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_sqlite_store_killed_mid_writes_keeps_every_acknowledged_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_jobs_lost_attempts_and_restart_wait_come_back_after_a_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_gpus_fault_count_and_its_agent_run_come_back_after_a_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_nodes_fault_count_comes_back_after_a_reopen_until_it_is_deleted, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_a_gangs_ended_parts_and_first_failure_come_back_after_a_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sqlite_always_grants_leadership_with_a_new_epoch,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_stores_on_one_postgres_lead_one_at_a_time, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_postgres_leader_that_loses_its_connection_knows_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_postgres_follower_that_loses_its_connection_comes_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_postgres_commit_after_a_failed_statement_fails,
                                        setup, teardown),
        cmocka_unit_test(test_a_store_url_is_shown_without_its_password),
        cmocka_unit_test(test_an_unreachable_database_is_named_without_its_password),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
