/* Unit tests for the per-node wake-ups of the agents' long-poll
 * (src/server/wake_slots.c): real threads parked on the slots, a real
 * mutex. A wait's wake-ups are counted by the slot, so a decision for one
 * node that woke another node's wait shows as a count, not as a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <time.h>

#include "common/fsutil.h"
#include "server/wake_slots.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

struct waiter {
    struct wake_slots *w;
    int64_t node_id;
    int64_t wait_ms;
    const volatile int *stop;
    bool keep; /* leave what woke it undelivered (no answer sent) */
    pthread_t thread;
    bool woke; /* wake_slots_wait's answer */
};

static void *wait_thread(void *arg)
{
    struct waiter *a = arg;
    struct timespec deadline = clock_in_us(CLOCK_MONOTONIC, a->wait_ms * 1000);
    pthread_mutex_lock(&mu);
    a->woke = wake_slots_wait(a->w, &mu, a->node_id, &deadline, a->stop);
    if (a->woke && !a->keep)
        wake_slots_delivered(a->w, a->node_id); /* as a wait answer does */
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void start_wait(struct waiter *a, struct wake_slots *w, int64_t node_id, int64_t wait_ms,
                       const volatile int *stop)
{
    a->w = w;
    a->node_id = node_id;
    a->wait_ms = wait_ms;
    a->stop = stop;
    a->keep = false;
    a->woke = false;
    assert_int_equal(pthread_create(&a->thread, NULL, wait_thread, a), 0);
}

static void sleep_ms(int64_t ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

/* Returns once n waits are parked for node_id: each counts itself under
 * the mutex, which the condition wait then gives up, so they are parked. */
static void until_parked(struct wake_slots *w, int64_t node_id, int n)
{
    for (;;) {
        pthread_mutex_lock(&mu);
        int parked = wake_slots_parked(w, node_id);
        pthread_mutex_unlock(&mu);
        if (parked == n)
            return;
        sleep_ms(1);
    }
}

static uint64_t wakeups(struct wake_slots *w, int64_t node_id)
{
    pthread_mutex_lock(&mu);
    uint64_t n = wake_slots_wakeups(w, node_id);
    pthread_mutex_unlock(&mu);
    return n;
}

static void decide(struct wake_slots *w, int64_t node_id)
{
    pthread_mutex_lock(&mu);
    wake_slots_decided(w, node_id);
    pthread_mutex_unlock(&mu);
}

static void test_a_decision_for_one_node_wakes_only_that_nodes_wait(void **state)
{
    (void)state;
    static struct wake_slots w;
    assert_int_equal(wake_slots_init(&w), 0);
    static const int stop = 0;
    struct waiter a, b;
    start_wait(&a, &w, 1, 60000, &stop);
    start_wait(&b, &w, 2, 60000, &stop);
    until_parked(&w, 1, 1);
    until_parked(&w, 2, 1);

    decide(&w, 2);
    pthread_join(b.thread, NULL);
    assert_true(b.woke);
    assert_int_equal(wakeups(&w, 2), 1);
    /* A wait woken by mistake counts its wake-up once it has the mutex
     * back; the pause only gives it the time to (a slow machine could hide
     * such a mistake, never fail this test). */
    sleep_ms(50);
    assert_int_equal(wakeups(&w, 1), 0);
    pthread_mutex_lock(&mu);
    assert_int_equal(wake_slots_parked(&w, 1), 1);
    assert_false(wake_slots_undelivered(&w, 1));
    pthread_mutex_unlock(&mu);

    decide(&w, 1);
    pthread_join(a.thread, NULL);
    assert_true(a.woke);
    assert_int_equal(wakeups(&w, 1), 1);
    wake_slots_release(&w);
}

static void test_a_decision_wakes_every_wait_parked_for_its_node(void **state)
{
    (void)state;
    static struct wake_slots w;
    assert_int_equal(wake_slots_init(&w), 0);
    static const int stop = 0;
    struct waiter a, b; /* an agent's old wait still parked beside its new one */
    start_wait(&a, &w, 3, 60000, &stop);
    start_wait(&b, &w, 3, 60000, &stop);
    until_parked(&w, 3, 2);
    pthread_mutex_lock(&mu);
    a.keep = b.keep = true; /* neither answers: both see the decision */
    wake_slots_decided(&w, 3);
    pthread_mutex_unlock(&mu);
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    assert_true(a.woke);
    assert_true(b.woke);
    assert_int_equal(wakeups(&w, 3), 2);
    wake_slots_release(&w);
}

static void test_a_wait_returns_at_once_when_its_node_has_something_undelivered(void **state)
{
    (void)state;
    static struct wake_slots w;
    assert_int_equal(wake_slots_init(&w), 0);
    static const int stop = 0;
    decide(&w, 4);
    struct waiter a;
    start_wait(&a, &w, 4, 60000, &stop);
    pthread_join(a.thread, NULL);
    assert_true(a.woke);
    assert_int_equal(wakeups(&w, 4), 0); /* it never parked */
    pthread_mutex_lock(&mu);
    assert_false(wake_slots_undelivered(&w, 4));
    pthread_mutex_unlock(&mu);
    wake_slots_release(&w);
}

static void test_a_delivered_node_waits_until_its_deadline(void **state)
{
    (void)state;
    static struct wake_slots w;
    assert_int_equal(wake_slots_init(&w), 0);
    static const int stop = 0;
    decide(&w, 5);
    pthread_mutex_lock(&mu);
    wake_slots_delivered(&w, 5); /* a heartbeat reply carried it */
    pthread_mutex_unlock(&mu);
    struct waiter a;
    start_wait(&a, &w, 5, 20, &stop);
    pthread_join(a.thread, NULL);
    assert_false(a.woke);
    assert_int_equal(wakeups(&w, 5), 0); /* a timeout is no wake-up */
    wake_slots_release(&w);
}

static void test_wake_all_ends_every_wait_once_stop_is_set(void **state)
{
    (void)state;
    static struct wake_slots w;
    assert_int_equal(wake_slots_init(&w), 0);
    static volatile int stop = 0;
    struct waiter a, b, c;
    start_wait(&a, &w, 6, 60000, &stop);
    start_wait(&b, &w, 7, 60000, &stop);
    start_wait(&c, &w, 0, 60000, &stop); /* no slot: sleeps on the slotless condition */
    until_parked(&w, 6, 1);
    until_parked(&w, 7, 1);
    for (;;) {
        pthread_mutex_lock(&mu);
        int n = w.slotless_parked;
        pthread_mutex_unlock(&mu);
        if (n == 1)
            break;
        sleep_ms(1);
    }
    pthread_mutex_lock(&mu);
    stop = 1;
    wake_slots_wake_all(&w);
    pthread_mutex_unlock(&mu);
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    pthread_join(c.thread, NULL);
    assert_false(a.woke);
    assert_false(b.woke);
    assert_false(c.woke);
    assert_int_equal(wakeups(&w, 6), 1);
    assert_int_equal(wakeups(&w, 7), 1);
    wake_slots_release(&w);
}

static void test_a_wait_for_an_id_without_a_slot_sleeps_to_its_deadline(void **state)
{
    (void)state;
    static struct wake_slots w;
    assert_int_equal(wake_slots_init(&w), 0);
    static const int stop = 0;
    struct timespec before = clock_in_us(CLOCK_MONOTONIC, 0);
    struct waiter a;
    start_wait(&a, &w, WAKE_SLOTS_MAX_NODE_ID + 1, 30, &stop);
    pthread_join(a.thread, NULL);
    struct timespec after = clock_in_us(CLOCK_MONOTONIC, 0);
    assert_false(a.woke);
    /* not at once: its agent would ask again in a tight loop */
    int64_t ms = (after.tv_sec - before.tv_sec) * 1000 + (after.tv_nsec - before.tv_nsec) / 1000000;
    assert_true(ms >= 29);
    pthread_mutex_lock(&mu);
    wake_slots_decided(&w, WAKE_SLOTS_MAX_NODE_ID + 1); /* ignored, not a crash */
    wake_slots_decided(&w, -1);
    assert_false(wake_slots_undelivered(&w, WAKE_SLOTS_MAX_NODE_ID + 1));
    pthread_mutex_unlock(&mu);
    wake_slots_release(&w);
}

static void test_a_parked_wait_survives_the_table_growing(void **state)
{
    (void)state;
    static struct wake_slots w;
    assert_int_equal(wake_slots_init(&w), 0);
    static const int stop = 0;
    struct waiter a;
    start_wait(&a, &w, 1, 60000, &stop);
    until_parked(&w, 1, 1);
    decide(&w, 100000); /* the table of slots is reallocated */
    decide(&w, 1);
    pthread_join(a.thread, NULL);
    assert_true(a.woke);
    assert_int_equal(wakeups(&w, 1), 1);
    wake_slots_release(&w);
}

static void test_a_holders_own_decisions_wake_no_wait_of_its_node(void **state)
{
    (void)state;
    static struct wake_slots w;
    assert_int_equal(wake_slots_init(&w), 0);
    static const int stop = 0;
    struct waiter a;
    start_wait(&a, &w, 8, 60000, &stop);
    until_parked(&w, 8, 1);
    /* a heartbeat for node 8: its reply carries what it decides */
    pthread_mutex_lock(&mu);
    wake_slots_hold(&w, 8);
    wake_slots_decided(&w, 8);
    wake_slots_decided(&w, 8);
    wake_slots_delivered(&w, 8);
    pthread_mutex_unlock(&mu);
    sleep_ms(50); /* as in the first test: time for a wrong wake to show */
    assert_int_equal(wakeups(&w, 8), 0);
    /* the hold ended with the delivery: the next decision wakes the wait */
    decide(&w, 8);
    pthread_join(a.thread, NULL);
    assert_true(a.woke);
    assert_int_equal(wakeups(&w, 8), 1);
    wake_slots_release(&w);
}

static void *decide_9(void *arg)
{
    decide(arg, 9);
    return NULL;
}

static void test_a_hold_left_behind_delays_no_other_threads_decision(void **state)
{
    (void)state;
    static struct wake_slots w;
    assert_int_equal(wake_slots_init(&w), 0);
    static const int stop = 0;
    pthread_mutex_lock(&mu);
    wake_slots_hold(&w, 9); /* a reply that never said it was delivered */
    pthread_mutex_unlock(&mu);
    struct waiter a;
    start_wait(&a, &w, 9, 60000, &stop);
    until_parked(&w, 9, 1);
    pthread_t other; /* the scheduler's thread, say */
    assert_int_equal(pthread_create(&other, NULL, decide_9, &w), 0);
    pthread_join(other, NULL);
    pthread_join(a.thread, NULL);
    assert_true(a.woke);
    assert_int_equal(wakeups(&w, 9), 1);
    wake_slots_release(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_decision_for_one_node_wakes_only_that_nodes_wait),
        cmocka_unit_test(test_a_decision_wakes_every_wait_parked_for_its_node),
        cmocka_unit_test(test_a_wait_returns_at_once_when_its_node_has_something_undelivered),
        cmocka_unit_test(test_a_delivered_node_waits_until_its_deadline),
        cmocka_unit_test(test_wake_all_ends_every_wait_once_stop_is_set),
        cmocka_unit_test(test_a_wait_for_an_id_without_a_slot_sleeps_to_its_deadline),
        cmocka_unit_test(test_a_parked_wait_survives_the_table_growing),
        cmocka_unit_test(test_a_holders_own_decisions_wake_no_wait_of_its_node),
        cmocka_unit_test(test_a_hold_left_behind_delays_no_other_threads_decision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
