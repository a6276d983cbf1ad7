/*
 * The event log (src/store/store_events.c) on a real SQLite file in a
 * temporary directory or on PostgreSQL (test_store_target.h), and GET
 * /v1/events's parameter rules
 * (src/server/event_params.c): filters, tail, project limits, the
 * migration of an older events table, and bad parameters named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "server/event_params.h"
#include "store/store_events.h"
#include "store/store_pools.h"
#include "test_store_target.h"

struct fixture {
    struct test_store_target t;
    struct store *s;
    int64_t node_a, node_b, job_vision, job_speech;
};

static int64_t add_node(struct store *s, const char *name, const char *pool)
{
    struct node *n = calloc(1, sizeof *n);
    assert_non_null(n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->state = NODE_READY;
    json_t *info = json_object();
    assert_int_equal(store_node_upsert(s, n, info, 1000, NULL), 0);
    json_decref(info);
    if (pool) {
        snprintf(n->pool, sizeof n->pool, "%s", pool);
        n->created_ms = 1000;
        assert_int_equal(store_pool_node_put(s, n, NULL, NULL), 0);
    }
    int64_t id = n->id;
    free(n);
    return id;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    test_store_target_make(&f->t);
    f->s = test_store_target_open(&f->t);
    f->node_a = add_node(f->s, "node-a", NULL);
    f->node_b = add_node(f->s, "elastic-1", "elastic");
    f->job_vision = test_store_add_job(f->s, "vision");
    f->job_speech = test_store_add_job(f->s, "speech");
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

/* The events f matches; kinds joined with ',' into out. */
static int list(struct store *s, const struct event_filter *flt, char *out, size_t size, bool *more)
{
    json_t *evs = NULL;
    bool m = false;
    assert_int_equal(store_events_query(s, flt, &evs, &m, NULL), 0);
    out[0] = '\0';
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e)
    {
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", i ? "," : "", json_string_value(json_object_get(e, "kind")));
    }
    int n = (int)json_array_size(evs);
    json_decref(evs);
    if (more)
        *more = m;
    return n;
}

static void add_some(struct fixture *f)
{
    assert_int_equal(store_event_add(f->s, 1000, "node_registered", 0, f->node_a, "hi", NULL), 0);
    assert_int_equal(store_event_add(f->s, 2000, "job_submitted", f->job_vision, 0, "s", NULL), 0);
    assert_int_equal(store_event_add(f->s, 3000, "job_starting", f->job_vision, f->node_b, "p", NULL), 0);
    assert_int_equal(store_event_add(f->s, 4000, "job_submitted", f->job_speech, 0, "s", NULL), 0);
    assert_int_equal(store_event_add(f->s, 5000, "job_starting", f->job_speech, f->node_a, "p", NULL), 0);
    assert_int_equal(store_event_add_in(f->s, 6000, "budget_alert", 0, 0, NULL, "vision", "80%", NULL), 0);
    assert_int_equal(store_event_add(f->s, 7000, "node_lost", 0, f->node_a, "gone", NULL), 0);
}

static void test_an_event_takes_its_node_pool_and_project_from_their_rows(void **state)
{
    struct fixture *f = *state;
    add_some(f);
    struct event_filter flt = {0};
    flt.job_id = f->job_vision;
    json_t *evs = NULL;
    bool more;
    assert_int_equal(store_events_query(f->s, &flt, &evs, &more, NULL), 0);
    assert_int_equal(json_array_size(evs), 2);
    json_t *placed = json_array_get(evs, 1);
    assert_string_equal(json_string_value(json_object_get(placed, "node")), "elastic-1");
    assert_string_equal(json_string_value(json_object_get(placed, "pool")), "elastic");
    assert_string_equal(json_string_value(json_object_get(placed, "project")), "vision");
    assert_true(json_is_null(json_object_get(json_array_get(evs, 0), "node")));
    assert_true(json_is_null(json_object_get(json_array_get(evs, 0), "pool")));
    assert_false(more);
    json_decref(evs);
}

static void test_filters_by_node_pool_project_kind_and_time(void **state)
{
    struct fixture *f = *state;
    add_some(f);
    char kinds[256];
    struct event_filter flt = {0};
    flt.node = "node-a";
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, NULL), 3);
    assert_string_equal(kinds, "node_registered,job_starting,node_lost");
    memset(&flt, 0, sizeof flt);
    flt.pool = "elastic";
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, NULL), 1);
    memset(&flt, 0, sizeof flt);
    flt.project = "vision";
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, NULL), 3);
    assert_string_equal(kinds, "job_submitted,job_starting,budget_alert");
    memset(&flt, 0, sizeof flt);
    flt.kinds[0] = "node_*";
    flt.kinds[1] = "budget_alert";
    flt.nkinds = 2;
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, NULL), 3);
    assert_string_equal(kinds, "node_registered,budget_alert,node_lost");
    memset(&flt, 0, sizeof flt);
    flt.from_ms = 3000;
    flt.to_ms = 5000;
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, NULL), 2);
    assert_string_equal(kinds, "job_starting,job_submitted");
}

static void test_tail_gives_the_newest_oldest_first_and_says_more(void **state)
{
    struct fixture *f = *state;
    add_some(f);
    char kinds[256];
    bool more;
    struct event_filter flt = {0};
    flt.tail = 2;
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, &more), 2);
    assert_string_equal(kinds, "budget_alert,node_lost");
    assert_true(more);
    flt.tail = 7;
    list(f->s, &flt, kinds, sizeof kinds, &more);
    assert_false(more);
    memset(&flt, 0, sizeof flt);
    flt.limit = 2;
    flt.since_id = 1;
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, &more), 2);
    assert_string_equal(kinds, "job_submitted,job_starting");
    assert_true(more);
    flt.since_id = 7;
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, &more), 0);
    assert_false(more);
}

static void test_a_project_limited_list_hides_other_projects_and_projectless_events(void **state)
{
    struct fixture *f = *state;
    add_some(f);
    char kinds[256];
    struct event_filter flt = {0};
    flt.projects = json_pack("[s]", "speech");
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, NULL), 2);
    assert_string_equal(kinds, "job_submitted,job_starting");
    flt.node = "node-a"; /* the node's own events are no project's */
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, NULL), 1);
    json_decref(flt.projects);
}

/* An events table as it was before node, pool and project were stored, in
 * a SQLite database from before schema versions. */
static void test_an_older_events_table_is_migrated_and_filled(void **state)
{
    struct fixture *f = *state;
    if (test_store_target_is_pg(&f->t))
        skip();
    store_close(f->s);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->t.path, &db), SQLITE_OK);
    char sql[512];
    snprintf(sql, sizeof sql,
             "DROP TABLE schema_version; DROP TABLE events;"
             "CREATE TABLE events(id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL,"
             "  kind TEXT NOT NULL, job_id INTEGER, node_id INTEGER, message TEXT NOT NULL);"
             "INSERT INTO events(time_ms, kind, job_id, node_id, message)"
             "  VALUES(1, 'job_starting', %lld, %lld, 'old');",
             (long long)f->job_speech, (long long)f->node_b);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    f->s = test_store_target_open(&f->t);
    store_close(f->s);
    f->s = test_store_target_open(&f->t); /* a second start changes nothing */
    struct event_filter flt = {0};
    flt.pool = "elastic";
    flt.project = "speech";
    flt.node = "elastic-1";
    char kinds[64];
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, NULL), 1);
    assert_string_equal(kinds, "job_starting");
    assert_int_equal(store_event_add(f->s, 2, "job_running", f->job_speech, f->node_b, "new", NULL), 0);
    assert_int_equal(list(f->s, &flt, kinds, sizeof kinds, NULL), 2);
}

/* Query parameters as a NULL-terminated list of name, value. */
static const char *lookup(void *ctx, const char *name)
{
    const char *const *kv = ctx;
    for (; kv[0]; kv += 2)
        if (!strcmp(kv[0], name))
            return kv[1];
    return NULL;
}

static void test_every_parameter_reaches_the_filter(void **state)
{
    (void)state;
    const char *kv[] = {"since", "5", "job", "7", "node", "n1", "pool", "p", "project", "vision",
                        "kind", "job_,node_lost,pool*", "from", "2025-12-02", "to", "1764720000.5",
                        "tail", "10", NULL};
    struct event_filter f;
    struct event_kinds_buf kb;
    struct tide_err err = {0};
    assert_int_equal(event_params_parse(lookup, kv, &f, &kb, &err), 0);
    assert_int_equal(f.since_id, 5);
    assert_int_equal(f.job_id, 7);
    assert_string_equal(f.node, "n1");
    assert_string_equal(f.pool, "p");
    assert_string_equal(f.project, "vision");
    assert_int_equal(f.nkinds, 3);
    assert_string_equal(f.kinds[0], "job_*");
    assert_string_equal(f.kinds[1], "node_lost");
    assert_string_equal(f.kinds[2], "pool*");
    assert_int_equal(f.from_ms, 1764633600000LL);
    assert_int_equal(f.to_ms, 1764720000500LL);
    assert_int_equal(f.tail, 10);
    assert_int_equal(f.limit, 0);
}

static void test_each_bad_parameter_is_named(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        {"since", "-1", "since"},      {"since", "x", "since"},      {"job", "0", "job"},
        {"limit", "100001", "limit"},  {"tail", "0", "tail"},        {"kind", "", "kind"},
        {"kind", "Job", "kind"},       {"kind", "a,,b", "kind"},     {"kind", "*", "kind"},
        {"node", "", "node"},          {"from", "2026-02-30", "from"}, {"from", "1e20", "from"},
        {"to", "2026-01-01T25:00", "to"}, {"to", "tomorrow", "to"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *kv[] = {cases[i][0], cases[i][1], NULL};
        struct event_filter f;
        struct event_kinds_buf kb;
        struct tide_err err = {0};
        assert_int_equal(event_params_parse(lookup, kv, &f, &kb, &err), TIDE_EINVAL);
        assert_string_equal(err.field, cases[i][2]);
        assert_int_equal(strncmp(err.message, cases[i][2], strlen(cases[i][2])), 0);
    }
    const char *both[] = {"tail", "5", "limit", "5", NULL};
    const char *backwards[] = {"from", "2026-03-02", "to", "2026-03-01", NULL};
    const char *const *bad[] = {both, backwards};
    const char *fields[] = {"tail", "to"};
    for (int i = 0; i < 2; i++) {
        struct event_filter f;
        struct event_kinds_buf kb;
        struct tide_err err = {0};
        assert_int_equal(event_params_parse(lookup, (void *)bad[i], &f, &kb, &err), TIDE_EINVAL);
        assert_string_equal(err.field, fields[i]);
    }
}

static void test_times_are_seconds_or_utc_dates(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(event_params_time_ms("0", &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(event_params_time_ms("1764680000.25", &ms), 0);
    assert_int_equal(ms, 1764680000250LL);
    assert_int_equal(event_params_time_ms("2025-12-02T13:30:05Z", &ms), 0);
    assert_int_equal(ms, 1764682205000LL);
    assert_int_equal(event_params_time_ms("2025-12-02T13:30", &ms), 0);
    assert_int_equal(ms, 1764682200000LL);
    assert_int_equal(event_params_time_ms("2025-12-02 13:30", &ms), 0);
    assert_int_equal(event_params_time_ms("2025-12-02T13", &ms), -1);
    assert_int_equal(event_params_time_ms("2025-12-02x", &ms), -1);
    assert_int_equal(event_params_time_ms("1764680000000", &ms), -1); /* milliseconds */
    assert_int_equal(event_params_time_ms("-5", &ms), -1);
    assert_int_equal(event_params_time_ms("", &ms), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_an_event_takes_its_node_pool_and_project_from_their_rows,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_filters_by_node_pool_project_kind_and_time, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tail_gives_the_newest_oldest_first_and_says_more, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_project_limited_list_hides_other_projects_and_projectless_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_older_events_table_is_migrated_and_filled, setup,
                                        teardown),
        cmocka_unit_test(test_every_parameter_reaches_the_filter),
        cmocka_unit_test(test_each_bad_parameter_is_named),
        cmocka_unit_test(test_times_are_seconds_or_utc_dates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
