/* Unit tests for the wait answer's actions on the agent's side
 * (src/agent/agent_wake.c, agent_heartbeat.c): the long-poll thread hands
 * an answer that carries actions to the main loop, against a real HTTP
 * server on loopback (libmicrohttpd), and applying one keeps the
 * heartbeat reply's guards (the epoch, starts of tasks already finished)
 * and does not undo a newer heartbeat reply (its decision count). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_heartbeat.h"
#include "agent/agent_servers.h"
#include "agent/agent_wake.h"

#define ANSWER                                                                                    \
    "{\"wake\": true, \"epoch\": 3, \"actions\": [{\"type\": \"stop\", \"job_id\": 9, "          \
    "\"attempt\": 1, \"reason\": \"cancelled\"}]}"

/* A server that answers every request with ANSWER. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls)
{
    (void)cls, (void)url, (void)method, (void)version, (void)data;
    if (!*con_cls) {
        *con_cls = conn;
        return MHD_YES;
    }
    if (*size) {
        *size = 0;
        return MHD_YES;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(ANSWER), (void *)ANSWER, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ok = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return ok;
}

static void test_the_wait_thread_hands_an_answer_with_actions_to_the_loop(void **state)
{
    (void)state;
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                         NULL, on_request, NULL, MHD_OPTION_END);
    assert_non_null(d);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d",
             MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port);
    char *urls[] = {url};
    static struct agent_servers servers;
    assert_int_equal(agent_servers_init(&servers, urls, 1), 0);
    struct agent_wake *w = agent_wake_start(&servers);
    assert_non_null(w);
    char token[64];
    assert_null(agent_wake_take(w, token, sizeof token)); /* nothing yet */
    agent_wake_set(w, "node-token-1", 1000);
    assert_true(agent_wake_wait(w, 5000, NULL, 0));
    char *answer = agent_wake_take(w, token, sizeof token);
    assert_non_null(answer);
    assert_string_equal(token, "node-token-1");
    assert_non_null(strstr(answer, "\"stop\""));
    free(answer);
    agent_wake_stop(w); /* the thread ends before the server goes */
    assert_true(w->done);
    MHD_stop_daemon(d);
    agent_servers_release(&servers);
}

/* A server whose waits are held until hold_release is set (at most 20 s);
 * answered counts the waits it has let go. */
static int held, hold_release, answered;

static enum MHD_Result on_held_request(void *cls, struct MHD_Connection *conn, const char *url,
                                       const char *method, const char *version, const char *data,
                                       size_t *size, void **con_cls)
{
    (void)cls, (void)url, (void)method, (void)version, (void)data;
    if (!*con_cls) {
        *con_cls = conn;
        return MHD_YES;
    }
    if (*size) {
        *size = 0;
        return MHD_YES;
    }
    __atomic_fetch_add(&held, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 2000 && !__atomic_load_n(&hold_release, __ATOMIC_SEQ_CST); i++)
        usleep(10 * 1000);
    __atomic_fetch_add(&answered, 1, __ATOMIC_SEQ_CST);
    static const char body[] = "{\"wake\": false}";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ok = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return ok;
}

static void test_stopping_the_wake_abandons_a_wait_the_server_holds(void **state)
{
    (void)state;
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                         NULL, on_held_request, NULL, MHD_OPTION_END);
    assert_non_null(d);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d",
             MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port);
    char *urls[] = {url};
    static struct agent_servers servers;
    assert_int_equal(agent_servers_init(&servers, urls, 1), 0);
    struct agent_wake *w = agent_wake_start(&servers);
    assert_non_null(w);
    agent_wake_set(w, "node-token-1", 30000);
    for (int i = 0; i < 1000 && !__atomic_load_n(&held, __ATOMIC_SEQ_CST); i++)
        usleep(10 * 1000);
    assert_int_equal(__atomic_load_n(&held, __ATOMIC_SEQ_CST), 1);
    /* the wait is parked at the server: the stop must not wait for its answer */
    agent_wake_stop(w);
    assert_true(w->done);
    assert_int_equal(__atomic_load_n(&hold_release, __ATOMIC_SEQ_CST), 0);
    /* the server still holds the wait: the stop returned without its answer */
    assert_int_equal(__atomic_load_n(&answered, __ATOMIC_SEQ_CST), 0);
    __atomic_store_n(&hold_release, 1, __ATOMIC_SEQ_CST);
    MHD_stop_daemon(d);
    assert_int_equal(__atomic_load_n(&held, __ATOMIC_SEQ_CST), 1); /* no wait after the stop */
    agent_servers_release(&servers);
}

static struct agent a;

static void test_a_wait_answer_of_a_deposed_leader_or_not_json_is_not_applied(void **state)
{
    (void)state;
    char *urls[] = {"http://127.0.0.1:1"};
    memset(&a, 0, sizeof a);
    assert_int_equal(agent_servers_init(&a.servers, urls, 1), 0);
    assert_true(agent_servers_epoch_ok(&a.servers, 5));
    bool changed = true;
    assert_int_equal(agent_heartbeat_apply_actions(&a, ANSWER, 0, &changed), TIDE_ECONFLICT);
    assert_false(changed);
    assert_int_equal(agent_heartbeat_apply_actions(&a, "[1]", 0, &changed), TIDE_EINVAL);
    agent_servers_release(&a.servers);
}

/* An agent (no server behind it) that has finished and forgotten job 7's
 * attempt 1: a start of it is ignored, so applying one starts nothing. */
static void agent_that_forgot_job_7(void)
{
    char *urls[] = {"http://127.0.0.1:1"};
    memset(&a, 0, sizeof a);
    assert_int_equal(agent_servers_init(&a.servers, urls, 1), 0);
    a.forgotten[0].job_id = 7;
    a.forgotten[0].attempt = 1;
    a.nforgotten = 1;
}

static void test_a_late_start_of_a_task_already_finished_and_forgotten_is_ignored(void **state)
{
    (void)state;
    agent_that_forgot_job_7(); /* the answer was built before the exit was recorded */
    const char *late = "{\"wake\": true, \"epoch\": 1, \"actions\": [{\"type\": \"start\", "
                       "\"job_id\": 7, \"attempt\": 1, \"command\": [\"true\"], \"gpus\": []}]}";
    bool changed = true;
    assert_int_equal(agent_heartbeat_apply_actions(&a, late, 0, &changed), 0);
    assert_false(changed);
    assert_int_equal(a.ntasks, 0);
    agent_servers_release(&a.servers);
}

/* One wait answer with a start of job 7 (attempt 1, forgotten: see
 * agent_that_forgot_job_7) carrying decision d. */
static int apply_wait_answer(int decision, bool *changed)
{
    char answer[256];
    snprintf(answer, sizeof answer,
             "{\"wake\": true, \"epoch\": 1, \"decision\": %d, \"actions\": [{\"type\": "
             "\"start\", \"job_id\": 7, \"attempt\": 1, \"command\": [\"true\"], \"gpus\": []}]}",
             decision);
    return agent_heartbeat_apply_actions(&a, answer, 0, changed);
}

static void test_a_wait_answer_derived_before_the_last_heartbeat_reply_is_not_applied(void **state)
{
    (void)state;
    agent_that_forgot_job_7();
    bool changed = true;
    const char *reply = "{\"epoch\": 1, \"decision\": 5, \"actions\": [], \"ack\": []}";
    assert_int_equal(agent_heartbeat_apply_reply(&a, reply, 0, &changed), 0);
    assert_int_equal(a.last_decision, 5);
    /* derived at decision 4, read after the reply of decision 5 */
    assert_int_equal(apply_wait_answer(4, &changed), 1);
    assert_false(changed);
    assert_int_equal(a.last_decision, 5);
    /* as recent as the reply, or newer: applied */
    assert_int_equal(apply_wait_answer(5, &changed), 0);
    assert_int_equal(apply_wait_answer(6, &changed), 0);
    assert_int_equal(a.last_decision, 6);
    /* a restarted server counts from 0 again: its replies set the count */
    reply = "{\"epoch\": 1, \"decision\": 2, \"actions\": [], \"ack\": []}";
    assert_int_equal(agent_heartbeat_apply_reply(&a, reply, 0, &changed), 0);
    assert_int_equal(apply_wait_answer(3, &changed), 0);
    assert_int_equal(a.ntasks, 0);
    agent_servers_release(&a.servers);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_wait_thread_hands_an_answer_with_actions_to_the_loop),
        cmocka_unit_test(test_stopping_the_wake_abandons_a_wait_the_server_holds),
        cmocka_unit_test(test_a_wait_answer_of_a_deposed_leader_or_not_json_is_not_applied),
        cmocka_unit_test(test_a_late_start_of_a_task_already_finished_and_forgotten_is_ignored),
        cmocka_unit_test(test_a_wait_answer_derived_before_the_last_heartbeat_reply_is_not_applied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
