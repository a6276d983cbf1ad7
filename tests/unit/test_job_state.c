/* Unit tests for the job state machine (src/core/job_state.c, DESIGN.md "Job states"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/job_state.h"

static const enum job_state finals[] = {JOB_SUCCEEDED, JOB_FAILED, JOB_CANCELLED, JOB_TIMEOUT};

static void test_pending_can_start_be_cancelled_or_rejected(void **state)
{
    (void)state;
    assert_true(job_transition_allowed(JOB_PENDING, JOB_STARTING));
    assert_true(job_transition_allowed(JOB_PENDING, JOB_CANCELLED));
    assert_true(job_transition_allowed(JOB_PENDING, JOB_FAILED));
}

static void test_pending_cannot_skip_starting(void **state)
{
    (void)state;
    assert_false(job_transition_allowed(JOB_PENDING, JOB_RUNNING));
    assert_false(job_transition_allowed(JOB_PENDING, JOB_SUCCEEDED));
    assert_false(job_transition_allowed(JOB_PENDING, JOB_TIMEOUT));
    assert_false(job_transition_allowed(JOB_PENDING, JOB_LOST));
    assert_false(job_transition_allowed(JOB_PENDING, JOB_PREEMPTED));
}

static void test_starting_becomes_running_or_finishes_before_it_was_seen(void **state)
{
    (void)state;
    assert_true(job_transition_allowed(JOB_STARTING, JOB_RUNNING));
    for (size_t i = 0; i < sizeof finals / sizeof finals[0]; i++)
        assert_true(job_transition_allowed(JOB_STARTING, finals[i]));
    assert_true(job_transition_allowed(JOB_STARTING, JOB_LOST));
}

static void test_running_reaches_every_final_state(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof finals / sizeof finals[0]; i++)
        assert_true(job_transition_allowed(JOB_RUNNING, finals[i]));
}

static void test_running_can_be_preempted_or_lost(void **state)
{
    (void)state;
    assert_true(job_transition_allowed(JOB_RUNNING, JOB_PREEMPTED));
    assert_true(job_transition_allowed(JOB_RUNNING, JOB_LOST));
}

static void test_running_cannot_go_back_to_starting(void **state)
{
    (void)state;
    assert_false(job_transition_allowed(JOB_RUNNING, JOB_STARTING));
    assert_false(job_transition_allowed(JOB_RUNNING, JOB_RUNNING));
}

static void test_preempted_and_lost_return_to_pending(void **state)
{
    (void)state;
    assert_true(job_transition_allowed(JOB_PREEMPTED, JOB_PENDING));
    assert_true(job_transition_allowed(JOB_LOST, JOB_PENDING));
    /* and fail when no attempts remain */
    assert_true(job_transition_allowed(JOB_LOST, JOB_FAILED));
}

static void test_preempted_and_lost_cannot_run_without_being_rescheduled(void **state)
{
    (void)state;
    assert_false(job_transition_allowed(JOB_PREEMPTED, JOB_RUNNING));
    assert_false(job_transition_allowed(JOB_PREEMPTED, JOB_STARTING));
    assert_false(job_transition_allowed(JOB_LOST, JOB_RUNNING));
    assert_false(job_transition_allowed(JOB_LOST, JOB_STARTING));
}

static void test_final_states_allow_no_transition(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof finals / sizeof finals[0]; i++)
        for (int to = 0; to < JOB_STATE_COUNT; to++)
            assert_false(job_transition_allowed(finals[i], (enum job_state)to));
}

static void test_exactly_four_states_are_final(void **state)
{
    (void)state;
    int n = 0;
    for (int s = 0; s < JOB_STATE_COUNT; s++)
        n += job_state_is_final((enum job_state)s);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < sizeof finals / sizeof finals[0]; i++)
        assert_true(job_state_is_final(finals[i]));
    assert_false(job_state_is_final(JOB_LOST));
    assert_false(job_state_is_final(JOB_PREEMPTED));
}

static void test_starting_running_and_preempted_jobs_hold_a_node(void **state)
{
    (void)state;
    /* A preempted job keeps its GPUs until its agent says it has stopped. */
    for (int s = 0; s < JOB_STATE_COUNT; s++)
        assert_int_equal(job_state_is_on_node((enum job_state)s),
                         s == JOB_STARTING || s == JOB_RUNNING || s == JOB_PREEMPTED);
}

static void test_every_state_name_parses_back_to_its_state(void **state)
{
    (void)state;
    for (int s = 0; s < JOB_STATE_COUNT; s++) {
        enum job_state parsed = JOB_STATE_COUNT;
        assert_int_equal(job_state_parse(job_state_name((enum job_state)s), &parsed), 0);
        assert_int_equal(parsed, s);
    }
}

static void test_state_names_match_the_design(void **state)
{
    (void)state;
    assert_string_equal(job_state_name(JOB_PENDING), "pending");
    assert_string_equal(job_state_name(JOB_STARTING), "starting");
    assert_string_equal(job_state_name(JOB_RUNNING), "running");
    assert_string_equal(job_state_name(JOB_SUCCEEDED), "succeeded");
    assert_string_equal(job_state_name(JOB_FAILED), "failed");
    assert_string_equal(job_state_name(JOB_CANCELLED), "cancelled");
    assert_string_equal(job_state_name(JOB_TIMEOUT), "timeout");
    assert_string_equal(job_state_name(JOB_PREEMPTED), "preempted");
    assert_string_equal(job_state_name(JOB_LOST), "lost");
}

static void test_out_of_range_state_is_named_unknown(void **state)
{
    (void)state;
    assert_string_equal(job_state_name(JOB_STATE_COUNT), "unknown");
    assert_string_equal(job_state_name((enum job_state)-1), "unknown");
}

static void test_unknown_or_miscased_name_does_not_parse(void **state)
{
    (void)state;
    enum job_state s = JOB_RUNNING;
    assert_int_equal(job_state_parse("unknown", &s), -1);
    assert_int_equal(job_state_parse("Running", &s), -1);
    assert_int_equal(job_state_parse("", &s), -1);
    assert_int_equal(s, JOB_RUNNING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_can_start_be_cancelled_or_rejected),
        cmocka_unit_test(test_pending_cannot_skip_starting),
        cmocka_unit_test(test_starting_becomes_running_or_finishes_before_it_was_seen),
        cmocka_unit_test(test_running_reaches_every_final_state),
        cmocka_unit_test(test_running_can_be_preempted_or_lost),
        cmocka_unit_test(test_running_cannot_go_back_to_starting),
        cmocka_unit_test(test_preempted_and_lost_return_to_pending),
        cmocka_unit_test(test_preempted_and_lost_cannot_run_without_being_rescheduled),
        cmocka_unit_test(test_final_states_allow_no_transition),
        cmocka_unit_test(test_exactly_four_states_are_final),
        cmocka_unit_test(test_starting_running_and_preempted_jobs_hold_a_node),
        cmocka_unit_test(test_every_state_name_parses_back_to_its_state),
        cmocka_unit_test(test_state_names_match_the_design),
        cmocka_unit_test(test_out_of_range_state_is_named_unknown),
        cmocka_unit_test(test_unknown_or_miscased_name_does_not_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
