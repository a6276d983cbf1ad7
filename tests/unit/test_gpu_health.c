/* Unit tests for GPU health (src/core/gpu_health.c) and what placement,
 * feasibility and undrain make of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/tide_err.h"
#include "core/feasible.h"
#include "core/gpu_health.h"
#include "core/operator.h"
#include "core/reconcile.h"
#include "core/sched.h"

#include "cluster_fixture.h"

static struct cluster c;
static struct scheduler s;
static struct action_list out;
static struct tide_err err;
static const struct gpu_health_config limit3 = {3, 3600 * 1000};

static int setup(void **state)
{
    (void)state;
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    cfg.node_timeout_ms = 30000;
    sched_init(&s, &cfg);
    cluster_init(&c);
    action_list_init(&out);
    tide_err_clear(&err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sched_release(&s);
    cluster_release(&c);
    action_list_release(&out);
    return 0;
}

static struct node *add_node(int64_t id, int ngpus)
{
    struct node n = fx_h200_node(id, ngpus);
    assert_non_null(cluster_put_node(&c, &n));
    return cluster_find_node(&c, id);
}

/* Places jobs 1 and 2 (1 GPU each) on node 1 and has its agent report
 * them running. */
static void run_two_jobs(void)
{
    struct job a = fx_job(1, 1), b = fx_job(2, 1);
    assert_non_null(cluster_add_job(&c, &a));
    assert_non_null(cluster_add_job(&c, &b));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 2);
    struct task_report running[2] = {{.job_id = 1, .attempt = 1, .exit_code = -1},
                                     {.job_id = 2, .attempt = 1, .exit_code = -1}};
    assert_int_equal(reconcile_heartbeat(&c, cluster_find_node(&c, 1), running, 2, 2000, &out), 0);
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_RUNNING);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_RUNNING);
    action_list_clear(&out);
}

static void test_a_faulty_gpu_is_never_given_out(void **state)
{
    (void)state;
    struct node *n = add_node(1, 2);
    assert_int_equal(gpu_health_fault(&c, n, 0, "xid 79", false, &limit3, 1000, &out),
                     GPU_HEALTH_NEW);
    struct job two = fx_job(1, 2), one = fx_job(2, 1);
    assert_non_null(cluster_add_job(&c, &two));
    assert_non_null(cluster_add_job(&c, &one));
    assert_int_equal(sched_pass(&s, &c, 2000, &out), 1);
    const struct action *a = fx_find(&out, ACTION_START, 2);
    assert_non_null(a);
    assert_int_equal(cluster_find_job(&c, 2)->gpu_index[0], 1);
    assert_null(fx_find(&out, ACTION_START, 1));
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_READY);
}

static void test_a_job_that_fits_only_with_a_faulty_gpu_waits_rather_than_being_refused(void **state)
{
    (void)state;
    struct node *n = add_node(1, 2);
    assert_true(gpu_health_fault(&c, n, 1, "ecc 3", false, &limit3, 1000, &out) >= 0);
    struct job two = fx_job(1, 2);
    assert_int_equal(feasible_check(&c, NULL, 0, &two, &err), 0);
}

static void test_a_fault_requeues_only_the_job_on_that_gpu(void **state)
{
    (void)state;
    add_node(1, 2);
    run_two_jobs();
    int bad = cluster_find_job(&c, 1)->gpu_index[0];
    struct node *n = cluster_find_node(&c, 1);
    assert_int_equal(gpu_health_fault(&c, n, bad, "xid 79", false, &limit3, 3000, &out),
                     GPU_HEALTH_NEW);
    const struct action *p = fx_find(&out, ACTION_PREEMPT, 1);
    assert_non_null(p);
    char want[64];
    snprintf(want, sizeof want, "gpu fault: GPU %d: xid 79", bad);
    assert_string_equal(p->reason, want);
    assert_null(fx_find(&out, ACTION_PREEMPT, 2));
    assert_int_equal(cluster_find_job(&c, 1)->state, JOB_PREEMPTED);
    assert_int_equal(cluster_find_job(&c, 2)->state, JOB_RUNNING);
    assert_false(n->drained);
}

static void test_a_gpu_fallen_off_the_bus_drains_the_node_and_stops_every_job(void **state)
{
    (void)state;
    add_node(1, 2);
    run_two_jobs();
    struct node *n = cluster_find_node(&c, 1);
    int bits = gpu_health_fault(&c, n, 1, "lost", true, &limit3, 3000, &out);
    assert_int_equal(bits, GPU_HEALTH_NEW | GPU_HEALTH_DRAINED);
    assert_true(n->drained);
    assert_int_equal(n->state, NODE_DRAINING);
    assert_string_equal(n->drain_reason, "gpu fault: GPU 1: lost");
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 1));
    assert_non_null(fx_find(&out, ACTION_PREEMPT, 2));
}

static void test_no_healthy_gpu_left_drains_the_node(void **state)
{
    (void)state;
    struct node *n = add_node(1, 2);
    assert_int_equal(gpu_health_fault(&c, n, 0, "xid 48", false, &limit3, 1000, &out),
                     GPU_HEALTH_NEW);
    assert_int_equal(gpu_health_fault(&c, n, 1, "xid 48", false, &limit3, 2000, &out),
                     GPU_HEALTH_NEW | GPU_HEALTH_DRAINED);
    assert_int_equal(n->state, NODE_DRAINING);
}

/* Node id with boards A100s in MIG mode (indices 0..boards-1), each cut
 * into two 3g.40gb instances (board b's are boards + 2b and boards + 2b + 1). */
static struct node *add_mig_node(int64_t id, int boards)
{
    struct node n = fx_node(id, boards * 3, "A100", 81920);
    for (int b = 0; b < boards; b++) {
        n.gpus[b].mig_mode = true;
        for (int k = 0; k < 2; k++) {
            struct gpu *g = &n.gpus[boards + 2 * b + k];
            snprintf(g->name, sizeof g->name, "A100 MIG 3g.40gb");
            snprintf(g->mig_profile, sizeof g->mig_profile, "3g.40gb");
            g->mig_parent = b;
            g->memory_total_mib = 40960;
        }
    }
    assert_non_null(cluster_put_node(&c, &n));
    return cluster_find_node(&c, id);
}

static struct job mig_job(int64_t id)
{
    struct job j = fx_job(id, 1);
    snprintf(j.mig, sizeof j.mig, "3g.40gb");
    return j;
}

static void test_a_fault_on_a_mig_gpu_stops_and_keeps_work_off_its_instances(void **state)
{
    (void)state;
    struct node *n = add_mig_node(1, 2);
    struct job a = mig_job(1);
    assert_non_null(cluster_add_job(&c, &a));
    assert_int_equal(sched_pass(&s, &c, 1000, &out), 1);
    int inst = cluster_find_job(&c, 1)->gpu_index[0];
    int board = n->gpus[inst].mig_parent;
    struct task_report running = {.job_id = 1, .attempt = 1, .exit_code = -1};
    assert_int_equal(reconcile_heartbeat(&c, n, &running, 1, 2000, &out), 0);
    action_list_clear(&out);
    /* NVML reports the board's fault, never an instance's */
    assert_int_equal(gpu_health_fault(&c, n, board, "xid 79", false, &limit3, 3000, &out),
                     GPU_HEALTH_NEW);
    const struct action *p = fx_find(&out, ACTION_PREEMPT, 1);
    assert_non_null(p);
    char want[64];
    snprintf(want, sizeof want, "gpu fault: GPU %d: xid 79", board);
    assert_string_equal(p->reason, want);
    assert_true(n->gpus[inst].faulty);
    snprintf(want, sizeof want, "GPU %d: xid 79", board);
    assert_string_equal(n->gpus[inst].fault, want);
    assert_false(n->drained); /* the other board's instances are healthy */
    /* New MIG jobs get the other board's two instances; a third waits. */
    action_list_clear(&out);
    for (int64_t id = 2; id <= 4; id++) {
        struct job j = mig_job(id);
        assert_non_null(cluster_add_job(&c, &j));
    }
    assert_int_equal(sched_pass(&s, &c, 4000, &out), 2);
    for (int64_t id = 2; id <= 4; id++) {
        const struct job *j = cluster_find_job(&c, id);
        if (j->ngpus_assigned)
            assert_int_not_equal(n->gpus[j->gpu_index[0]].mig_parent, board);
    }
}

static void test_a_fault_on_a_nodes_only_mig_gpu_drains_the_node(void **state)
{
    (void)state;
    struct node *n = add_mig_node(1, 1);
    assert_int_equal(gpu_health_fault(&c, n, 0, "ecc 2", false, &limit3, 1000, &out),
                     GPU_HEALTH_NEW | GPU_HEALTH_DRAINED);
    assert_int_equal(n->state, NODE_DRAINING);
    assert_string_equal(n->drain_reason, "gpu fault: GPU 0: ecc 2");
}

static void test_the_fault_limit_fails_a_hand_joined_node_and_undrain_restores_it(void **state)
{
    (void)state;
    struct node *n = add_node(1, 4);
    assert_true(gpu_health_fault(&c, n, 0, "xid 48", false, &limit3, 1000, &out) >= 0);
    assert_true(gpu_health_fault(&c, n, 1, "xid 48", false, &limit3, 2000, &out) >= 0);
    assert_int_equal(n->state, NODE_READY);
    int bits = gpu_health_fault(&c, n, 2, "ecc 2", false, &limit3, 3000, &out);
    assert_true(bits & GPU_HEALTH_FAILED);
    assert_int_equal(n->state, NODE_FAILED);
    assert_true(n->health_failed);
    assert_string_equal(n->drain_reason, "gpu fault: failed: 3 faults within 3600s");
    assert_int_equal(operator_undrain_node(&c, 1, &err), 0);
    assert_int_equal(n->state, NODE_READY);
    assert_int_equal(gpu_health_faulty_count(n), 0);
    assert_false(n->health_failed);
    struct job j = fx_job(1, 4);
    assert_non_null(cluster_add_job(&c, &j));
    assert_int_equal(sched_pass(&s, &c, 4000, &out), 1);
}

static void test_a_faulty_gpus_further_faults_do_not_fail_its_node(void **state)
{
    (void)state;
    struct node *n = add_node(1, 4);
    for (int k = 0; k < 5; k++)
        assert_int_equal(gpu_health_fault(&c, n, 0, "xid 79", false, &limit3, 1000 + k, &out),
                         k ? 0 : GPU_HEALTH_NEW);
    assert_int_equal(n->state, NODE_READY);
    assert_false(n->health_failed);
    assert_int_equal(n->faults_in_window, 1);
    /* two more GPUs, and the node's faults are three */
    assert_int_equal(gpu_health_fault(&c, n, 1, "xid 79", false, &limit3, 2000, &out),
                     GPU_HEALTH_NEW);
    assert_true(gpu_health_fault(&c, n, 2, "xid 79", false, &limit3, 3000, &out) &
                GPU_HEALTH_FAILED);
}

static void test_faults_outside_the_window_do_not_add_up(void **state)
{
    (void)state;
    struct node *n = add_node(1, 4);
    for (int k = 0; k < 5; k++)
        assert_int_equal(gpu_health_fault(&c, n, k % 4, "temp 95", false, &limit3,
                                          1000 + (int64_t)k * 3601 * 1000, &out) &
                             GPU_HEALTH_FAILED,
                         0);
    assert_int_equal(n->state, NODE_DRAINING); /* every GPU faulty, but not failed */
}

static void test_a_pool_node_reaching_the_limit_drains_for_its_autoscaler_to_fail(void **state)
{
    (void)state;
    struct node *n = add_node(1, 2);
    snprintf(n->pool, sizeof n->pool, "gpu");
    const struct gpu_health_config one = {1, 3600 * 1000};
    assert_true(gpu_health_fault(&c, n, 0, "xid 79", false, &one, 1000, &out) & GPU_HEALTH_FAILED);
    assert_int_equal(n->state, NODE_DRAINING);
    assert_true(n->health_failed);
}

static void test_a_probe_lifts_only_its_own_drain(void **state)
{
    (void)state;
    struct node *n = add_node(1, 1);
    assert_int_equal(gpu_health_probe(n, false, "burn: 3 errors", 1000), 1);
    assert_string_equal(n->drain_reason, "health probe failed: burn: 3 errors");
    assert_int_equal(n->state, NODE_DRAINING);
    assert_int_equal(gpu_health_probe(n, false, "burn: 3 errors", 1000), 0);
    assert_int_equal(gpu_health_probe(n, true, "ok", 1000), -1);
    assert_int_equal(n->state, NODE_READY);
    assert_false(n->drained);
    assert_int_equal(operator_drain_node(&c, 1, "maintenance", &err), 0);
    assert_int_equal(gpu_health_probe(n, true, "ok", 1000), 0);
    assert_int_equal(gpu_health_probe(n, false, "bad", 1000), 0);
    assert_string_equal(n->drain_reason, "maintenance");
}

static void test_undrain_clears_a_pool_nodes_gpu_fault_but_not_its_autoscalers_drain(void **state)
{
    (void)state;
    struct node *n = add_node(1, 2);
    snprintf(n->pool, sizeof n->pool, "gpu");
    n->state = NODE_DRAINING; /* scale-down under way */
    assert_true(gpu_health_fault(&c, n, 0, "ecc 1", false, &limit3, 1000, &out) >= 0);
    assert_int_equal(operator_undrain_node(&c, 1, &err), 0);
    assert_int_equal(gpu_health_faulty_count(n), 0);
    assert_int_equal(n->state, NODE_DRAINING);
    n->state = NODE_FAILED;
    assert_true(gpu_health_fault(&c, n, 0, "ecc 1", false, &limit3, 2000, &out) >= 0);
    assert_int_equal(operator_undrain_node(&c, 1, &err), TIDE_ECONFLICT);
}

static void test_undrain_refuses_a_healthy_undrained_node(void **state)
{
    (void)state;
    add_node(1, 1);
    assert_int_equal(operator_undrain_node(&c, 1, &err), TIDE_ECONFLICT);
    assert_string_equal(err.field, "node");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_faulty_gpu_is_never_given_out, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_job_that_fits_only_with_a_faulty_gpu_waits_rather_than_being_refused, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_a_fault_requeues_only_the_job_on_that_gpu, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_gpu_fallen_off_the_bus_drains_the_node_and_stops_every_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_healthy_gpu_left_drains_the_node, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_fault_on_a_mig_gpu_stops_and_keeps_work_off_its_instances, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_fault_on_a_nodes_only_mig_gpu_drains_the_node, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_the_fault_limit_fails_a_hand_joined_node_and_undrain_restores_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_faulty_gpus_further_faults_do_not_fail_its_node,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_faults_outside_the_window_do_not_add_up, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_pool_node_reaching_the_limit_drains_for_its_autoscaler_to_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_probe_lifts_only_its_own_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_undrain_clears_a_pool_nodes_gpu_fault_but_not_its_autoscalers_drain, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_undrain_refuses_a_healthy_undrained_node, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
