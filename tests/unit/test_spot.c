/* Spot pools: only preemptible work goes there; an interruption preempts,
 * then requeues at the deadline; the autoscaler releases and replaces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cluster_fixture.h"
#include "core/autoscaler.h"
#include "core/sched.h"
#include "core/spot.h"

#define S 1000

static struct pool spot_pool(void)
{
    struct pool p;
    pool_defaults(&p);
    snprintf(p.name, sizeof p.name, "spot");
    p.gpus_per_node = 1;
    p.max_nodes = 4;
    p.billing = BILLING_SPOT;
    p.price_per_node_hour_micros = 1000000;
    p.cooldown_s = 0;
    return p;
}

static struct node spot_node(int64_t id)
{
    struct node n = fx_h200_node(id, 1);
    snprintf(n.pool, sizeof n.pool, "spot");
    n.spot = true;
    return n;
}

static int placed(struct cluster *c, int64_t now)
{
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    struct scheduler s;
    sched_init(&s, &cfg);
    struct action_list out;
    action_list_init(&out);
    int n = sched_pass(&s, c, now, &out);
    action_list_release(&out);
    sched_release(&s);
    return n;
}

static void test_only_preemptible_jobs_are_placed_on_spot_nodes(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = spot_node(1);
    assert_non_null(cluster_put_node(&c, &n));
    struct job j = fx_job(10, 1);
    assert_non_null(cluster_add_job(&c, &j));
    assert_int_equal(placed(&c, S), 0);
    cluster_find_job(&c, 10)->preemptible = true;
    assert_int_equal(placed(&c, S), 1);
    cluster_release(&c);
}

static void test_a_queue_that_allows_spot_places_any_job_there(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = spot_node(1);
    assert_non_null(cluster_put_node(&c, &n));
    struct queue_config q;
    memset(&q, 0, sizeof q);
    q.allow_spot = true;
    struct job j = fx_job(10, 1);
    j.rules = &q;
    assert_non_null(cluster_add_job(&c, &j));
    assert_int_equal(placed(&c, S), 1);
    cluster_release(&c);
}

static void test_autoscaler_grows_a_spot_pool_only_for_preemptible_jobs(void **state)
{
    (void)state;
    struct pool pools[2] = {spot_pool()};
    pool_defaults(&pools[1]);
    snprintf(pools[1].name, sizeof pools[1].name, "dear");
    pools[1].price_per_node_hour_micros = 5000000; /* spot is cheaper */
    struct autoscaler a;
    autoscaler_init(&a, pools, 2);
    struct cluster c;
    cluster_init(&c);
    struct job j = fx_job(10, 1);
    assert_non_null(cluster_add_job(&c, &j));
    j = fx_job(11, 1);
    j.preemptible = true;
    assert_non_null(cluster_add_job(&c, &j));
    struct pool_action_list out;
    pool_action_list_init(&out);
    autoscaler_decide(&a, &c, S, &out);
    int spot = 0, dear = 0;
    for (size_t i = 0; i < out.len; i++)
        if (out.items[i].type == POOL_CREATE)
            *(out.items[i].pool == 0 ? &spot : &dear) += out.items[i].count;
    assert_int_equal(spot, 1);
    assert_int_equal(dear, 1);
    pool_action_list_release(&out);
    autoscaler_release(&a);
    cluster_release(&c);
}

static void test_interruption_preempts_then_requeues_at_the_deadline(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = spot_node(1);
    assert_non_null(cluster_put_node(&c, &n));
    struct job j = fx_job(10, 1);
    j.preemptible = true;
    assert_non_null(fx_add_running(&c, j, 1, 0));
    struct action_list out;
    action_list_init(&out);
    struct node *node = cluster_find_node(&c, 1);
    assert_int_equal(spot_interrupt(&c, node, 10 * S, 30 * S, "test", &out), 1);
    assert_int_equal(fx_count(&out, ACTION_PREEMPT, 10), 1);
    assert_int_equal(node->state, NODE_DRAINING);
    assert_int_equal(cluster_find_job(&c, 10)->state, JOB_PREEMPTED);
    assert_int_equal(spot_interrupt(&c, node, 11 * S, 30 * S, "again", &out), TIDE_EINVAL);
    assert_int_equal(spot_check(&c, 39 * S, &out), 0);
    assert_int_equal(spot_check(&c, 40 * S, &out), 1);
    const struct action *rq = fx_find(&out, ACTION_REQUEUE, 10);
    assert_non_null(rq);
    assert_int_equal(rq->state, JOB_PREEMPTED);
    struct job *back = cluster_find_job(&c, 10);
    assert_int_equal(back->state, JOB_PENDING);
    assert_int_equal(back->preemptions, 1); /* no retry used */
    assert_int_equal(fx_gpus_held(node), 0);
    action_list_release(&out);
    cluster_release(&c);
}

static void test_interrupted_node_is_released_when_empty_and_a_replacement_created(void **state)
{
    (void)state;
    struct pool pools[1] = {spot_pool()};
    struct autoscaler a;
    autoscaler_init(&a, pools, 1);
    struct cluster c;
    cluster_init(&c);
    struct node n = spot_node(1);
    n.created_ms = 0;
    assert_non_null(cluster_put_node(&c, &n));
    struct job j = fx_job(10, 1);
    j.preemptible = true;
    assert_non_null(fx_add_running(&c, j, 1, 0));
    struct action_list acts;
    action_list_init(&acts);
    spot_interrupt(&c, cluster_find_node(&c, 1), 10 * S, 30 * S, "test", &acts);
    struct pool_action_list out;
    pool_action_list_init(&out);
    /* Its job still stops: no release, and it is never made ready again. */
    autoscaler_decide(&a, &c, 11 * S, &out);
    for (size_t i = 0; i < out.len; i++)
        assert_int_not_equal(out.items[i].type, POOL_UNDRAIN);
    assert_int_equal(cluster_find_node(&c, 1)->state, NODE_DRAINING);
    spot_check(&c, 40 * S, &acts);
    pool_action_list_clear(&out);
    autoscaler_decide(&a, &c, 40 * S, &out);
    int releases = 0, creates = 0;
    for (size_t i = 0; i < out.len; i++) {
        releases += out.items[i].type == POOL_RELEASE;
        creates += out.items[i].type == POOL_CREATE ? out.items[i].count : 0;
    }
    assert_int_equal(releases, 1);
    assert_int_equal(creates, 1); /* the requeued job needs a node */
    action_list_release(&acts);
    pool_action_list_release(&out);
    autoscaler_release(&a);
    cluster_release(&c);
}

static void test_a_checkpoint_gets_the_time_left_to_the_spot_deadline(void **state)
{
    (void)state;
    struct node n = spot_node(1);
    assert_int_equal(spot_kill_grace_s(&n, 100 * S, 10), 10); /* not interrupted */
    n.interrupt_deadline_ms = 120 * S + 900;
    assert_int_equal(spot_kill_grace_s(&n, 100 * S, 2), 20);  /* before the deadline */
    assert_int_equal(spot_kill_grace_s(&n, 115 * S, 10), 10); /* 5 s left: not cut shorter */
    assert_int_equal(spot_kill_grace_s(&n, 130 * S, 10), 10); /* past it */
    /* a gang's ranks on a node not interrupted get the same time */
    struct cluster c;
    cluster_init(&c);
    assert_non_null(cluster_put_node(&c, &n));
    struct node other = spot_node(2);
    assert_non_null(cluster_put_node(&c, &other));
    struct job j = fx_job(7, 1); /* its first rank on node 2, a part on node 1 */
    struct job *gang = fx_add_running(&c, j, 2, 100 * S);
    assert_non_null(gang);
    int one[1] = {0};
    cluster_assign_part(&c, gang, cluster_find_node(&c, 1), one, 1);
    assert_int_equal(spot_job_kill_grace_s(&c, gang, 100 * S, 2), 20);
    cluster_find_node(&c, 1)->interrupt_deadline_ms = 0;
    assert_int_equal(spot_job_kill_grace_s(&c, gang, 100 * S, 2), 2);
    cluster_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_preemptible_jobs_are_placed_on_spot_nodes),
        cmocka_unit_test(test_a_queue_that_allows_spot_places_any_job_there),
        cmocka_unit_test(test_autoscaler_grows_a_spot_pool_only_for_preemptible_jobs),
        cmocka_unit_test(test_interruption_preempts_then_requeues_at_the_deadline),
        cmocka_unit_test(test_interrupted_node_is_released_when_empty_and_a_replacement_created),
        cmocka_unit_test(test_a_checkpoint_gets_the_time_left_to_the_spot_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
