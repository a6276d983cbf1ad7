/* The autoscaler's decisions on hand-built clusters with a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "cluster_fixture.h"
#include "core/autoscaler.h"
#include "core/placement_index.h"
#include "core/sched.h"

#define S 1000 /* ms */

static struct pool fx_pool(const char *name, int gpus, int min, int max, int64_t price)
{
    struct pool p;
    pool_defaults(&p);
    snprintf(p.name, sizeof p.name, "%s", name);
    p.gpus_per_node = gpus;
    p.min_nodes = min;
    p.max_nodes = max;
    p.price_per_node_hour_micros = price;
    p.scale_down_window_s = 60;
    p.cooldown_s = 30;
    p.boot_timeout_s = 120;
    return p;
}

/* A pool node in state, created at created_ms, with ids from 100. */
static struct node fx_pool_node(int64_t id, const struct pool *p, enum node_state state,
                                int64_t created_ms)
{
    struct node n = fx_h200_node(id, p->gpus_per_node);
    snprintf(n.pool, sizeof n.pool, "%s", p->name);
    n.state = state;
    n.created_ms = created_ms;
    n.last_heartbeat_ms = created_ms;
    return n;
}

static int created(const struct pool_action_list *l, int pool)
{
    int n = 0;
    for (size_t i = 0; i < l->len; i++)
        if (l->items[i].type == POOL_CREATE && l->items[i].pool == pool)
            n += l->items[i].count;
    return n;
}

static int count_type(const struct pool_action_list *l, enum pool_action_type t)
{
    int n = 0;
    for (size_t i = 0; i < l->len; i++)
        n += l->items[i].type == t;
    return n;
}

struct fx {
    struct cluster c;
    struct pool pools[4];
    int npools;
    struct autoscaler a;
    struct pool_action_list out;
};

static void fx_start(struct fx *f)
{
    cluster_init(&f->c);
    autoscaler_init(&f->a, f->pools, f->npools);
    pool_action_list_init(&f->out);
}

static void fx_stop(struct fx *f)
{
    cluster_release(&f->c);
    autoscaler_release(&f->a);
    pool_action_list_release(&f->out);
}

static void add_jobs(struct fx *f, int n, int gpus, int64_t submit_ms)
{
    for (int i = 0; i < n; i++) {
        struct job j = fx_job((int64_t)f->c.njobs + 1, gpus);
        j.submit_ms = submit_ms;
        assert_non_null(cluster_add_job(&f->c, &j));
    }
}

static void decide(struct fx *f, int64_t now_ms)
{
    pool_action_list_clear(&f->out);
    assert_true(autoscaler_decide(&f->a, &f->c, now_ms, &f->out) >= 0);
}

static void test_scale_from_zero_creates_exactly_the_bin_packed_nodes(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 4, 0, 10, 4000000)}, .npools = 1};
    fx_start(&f);
    add_jobs(&f, 3, 2, 0); /* 6 GPUs ... */
    add_jobs(&f, 2, 1, 0); /* ... + 2 = 8: two 4-GPU nodes */
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 2);
    fx_stop(&f);
}

static void test_a_node_drained_by_gpu_faults_is_replaced_not_undrained(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 2, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_DRAINING, 0);
    n.drained = true; /* gpu_health.h: fell off the bus */
    assert_non_null(cluster_put_node(&f.c, &n));
    add_jobs(&f, 1, 1, 0);
    decide(&f, 10 * S);
    assert_int_equal(count_type(&f.out, POOL_UNDRAIN), 0);
    assert_int_equal(created(&f.out, 0), 1);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_RELEASED); /* idle: let go */
    fx_stop(&f);
}

static void test_a_node_failed_by_gpu_faults_is_failed_once_its_tasks_end(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 2, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_DRAINING, 0);
    n.drained = n.health_failed = true;
    n.gpus[0].job_id = 7; /* its preempted task has not ended yet */
    assert_non_null(cluster_put_node(&f.c, &n));
    decide(&f, 10 * S);
    assert_int_equal(count_type(&f.out, POOL_FAIL), 0);
    cluster_find_node(&f.c, 100)->gpus[0].job_id = 0;
    decide(&f, 11 * S);
    assert_int_equal(count_type(&f.out, POOL_FAIL), 1);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_FAILED);
    fx_stop(&f);
}

static void test_a_node_drained_by_its_probe_is_kept_until_boot_timeout_then_failed(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 2, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_DRAINING, 0);
    n.drained = n.probe_drained = true;
    n.probe_drained_ms = 5 * S;
    assert_non_null(cluster_put_node(&f.c, &n));
    decide(&f, 100 * S); /* idle, but its probe may pass again */
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_DRAINING);
    assert_int_equal(f.out.len, 0);
    decide(&f, 126 * S); /* boot_timeout_s 120 after the drain */
    assert_int_equal(count_type(&f.out, POOL_FAIL), 1);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_FAILED);
    fx_stop(&f);
}

static void test_never_creates_past_max_nodes(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 3, 1000000)}, .npools = 1};
    fx_start(&f);
    add_jobs(&f, 10, 1, 0);
    decide(&f, S);
    assert_int_equal(created(&f.out, 0), 3);
    fx_stop(&f);
}

static void test_booting_nodes_count_as_capacity(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 4, 0, 10, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_PROVISIONING, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    add_jobs(&f, 4, 1, 0);
    decide(&f, S);
    assert_int_equal(created(&f.out, 0), 0);
    add_jobs(&f, 1, 1, 0);
    decide(&f, S);
    assert_int_equal(created(&f.out, 0), 1);
    fx_stop(&f);
}

static void test_waits_for_scale_up_delay(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 10, 1000000)}, .npools = 1};
    f.pools[0].scale_up_delay_s = 5;
    fx_start(&f);
    add_jobs(&f, 1, 1, 0);
    decide(&f, 4 * S);
    assert_int_equal(created(&f.out, 0), 0);
    decide(&f, 5 * S);
    assert_int_equal(created(&f.out, 0), 1);
    fx_stop(&f);
}

static void test_cheapest_pool_per_gpu_hour_wins_then_boot_time(void **state)
{
    (void)state;
    /* 8-GPU node at 16/h is 2/GPU-h; 1-GPU node at 3/h is 3/GPU-h. */
    struct fx f = {.pools = {fx_pool("small", 1, 0, 10, 3000000), fx_pool("big", 8, 0, 10, 16000000),
                             fx_pool("big-slow", 8, 0, 10, 16000000)},
                   .npools = 3};
    f.pools[1].boot_time_s = 10;
    f.pools[2].boot_time_s = 60;
    fx_start(&f);
    add_jobs(&f, 1, 1, 0);
    decide(&f, S);
    assert_int_equal(created(&f.out, 1), 1);
    assert_int_equal(created(&f.out, 0), 0);
    assert_int_equal(created(&f.out, 2), 0);
    fx_stop(&f);
}

static void test_a_pools_image_pull_time_counts_in_its_boot_time(void **state)
{
    (void)state;
    /* same price; "fast" boots sooner but pulls a large image first */
    struct fx f = {.pools = {fx_pool("fast", 8, 0, 10, 16000000), fx_pool("warm", 8, 0, 10, 16000000)},
                   .npools = 2};
    f.pools[0].boot_time_s = 10;
    f.pools[0].pull_time_s = 120;
    f.pools[1].boot_time_s = 60;
    fx_start(&f);
    add_jobs(&f, 1, 1, 0);
    decide(&f, S);
    assert_int_equal(created(&f.out, 1), 1);
    assert_int_equal(created(&f.out, 0), 0);
    fx_stop(&f);
}

static void test_falls_back_to_a_pool_that_fits_or_has_room(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("cheap", 2, 0, 1, 1000000), fx_pool("dear", 4, 0, 5, 8000000)},
                   .npools = 2};
    fx_start(&f);
    add_jobs(&f, 1, 4, 0); /* fits only "dear" */
    add_jobs(&f, 2, 2, 0); /* one fills cheap (max 1), the other goes to dear */
    decide(&f, S);
    assert_int_equal(created(&f.out, 0), 1);
    assert_int_equal(created(&f.out, 1), 2);
    fx_stop(&f);
}

static void test_keeps_min_nodes_from_zero(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 2, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    decide(&f, S);
    assert_int_equal(created(&f.out, 0), 2);
    fx_stop(&f);
}

static void test_idle_node_is_released_only_after_the_window(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    decide(&f, 100 * S); /* idle from now */
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 0);
    decide(&f, 159 * S);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 0);
    decide(&f, 160 * S);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 1);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_RELEASED);
    fx_stop(&f);
}

static void test_a_node_running_a_job_that_asked_for_no_gpu_cpu_or_memory_is_kept(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    assert_non_null(fx_add_running(&f.c, fx_job(1, 0), 100, 0)); /* gpus 0, cpus 0, no memory */
    /* idle GPUs may drain it (low utilisation), but it goes only once
     * the job has ended */
    for (int t = 100; t <= 1000; t += 100) {
        decide(&f, t * S);
        assert_int_equal(count_type(&f.out, POOL_RELEASE), 0);
    }
    assert_int_not_equal(cluster_find_node(&f.c, 100)->state, NODE_RELEASED);
    fx_stop(&f);
}

/* A queue capped at one running GPU, five 1-GPU jobs waiting in it and
 * one running (running: on a ready node), looked at with or without a
 * demand index: nodes only for what the cap lets run. */
static void check_queue_cap_bounds_new_nodes(bool running, bool by_shape)
{
    struct queue_config capped;
    memset(&capped, 0, sizeof capped);
    snprintf(capped.name, sizeof capped.name, "capped");
    capped.max_running_gpus = 1;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 10, 1000000)}, .npools = 1};
    fx_start(&f);
    struct demand d;
    demand_init(&d);
    if (by_shape)
        f.a.demand = &d;
    if (running) {
        struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, 0);
        assert_non_null(cluster_put_node(&f.c, &n));
        struct job j = fx_job(99, 1);
        j.rules = &capped;
        assert_non_null(fx_add_running(&f.c, j, 100, 0));
    }
    for (int i = 1; i <= 5; i++) {
        struct job j = fx_job(i, 1);
        j.rules = &capped;
        const struct job *in = cluster_add_job(&f.c, &j);
        assert_non_null(in);
        assert_int_equal(demand_add(&d, in), 0);
    }
    decide(&f, 100 * S);
    assert_int_equal(created(&f.out, 0), running ? 0 : 1);
    demand_release(&d);
    fx_stop(&f);
}

static void test_jobs_their_queue_cap_holds_back_get_no_nodes(void **state)
{
    (void)state;
    check_queue_cap_bounds_new_nodes(false, false);
    check_queue_cap_bounds_new_nodes(true, false);
    check_queue_cap_bounds_new_nodes(false, true);
    check_queue_cap_bounds_new_nodes(true, true);
}

static void test_a_free_node_named_as_nvml_names_it_serves_a_model_glob(void **state)
{
    (void)state;
    /* placement takes "h200*" on an "NVIDIA H200": so must the pools */
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    snprintf(f.pools[0].gpu_model, sizeof f.pools[0].gpu_model, "H200");
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, 0);
    snprintf(n.gpus[0].name, sizeof n.gpus[0].name, "NVIDIA H200");
    assert_non_null(cluster_put_node(&f.c, &n));
    struct job j = fx_job(1, 1);
    snprintf(j.gpu_model, sizeof j.gpu_model, "h200*");
    assert_non_null(cluster_add_job(&f.c, &j));
    decide(&f, 100 * S);
    assert_int_equal(created(&f.out, 0), 0);
    /* and a pool whose model is written another way still serves it */
    struct job k = fx_job(2, 1);
    snprintf(k.gpu_model, sizeof k.gpu_model, "h200");
    assert_non_null(cluster_add_job(&f.c, &k));
    decide(&f, 200 * S);
    assert_int_equal(created(&f.out, 0), 1);
    fx_stop(&f);
}

static void test_never_scales_below_min_nodes(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 1, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    for (int i = 0; i < 2; i++) {
        struct node n = fx_pool_node(100 + i, &f.pools[0], NODE_READY, 0);
        assert_non_null(cluster_put_node(&f.c, &n));
    }
    decide(&f, 100 * S);
    decide(&f, 1000 * S);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 1);
    decide(&f, 2000 * S);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 0);
    fx_stop(&f);
}

static void test_cooldown_after_scale_up_delays_scale_down(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    f.pools[0].scale_down_window_s = 0;
    f.pools[0].cooldown_s = 30;
    fx_start(&f);
    add_jobs(&f, 1, 1, 0);
    decide(&f, 10 * S); /* scale-up at 10 s */
    assert_int_equal(created(&f.out, 0), 1);
    cluster_remove_job(&f.c, 1);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, 10 * S);
    assert_non_null(cluster_put_node(&f.c, &n));
    decide(&f, 20 * S);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 0);
    decide(&f, 40 * S);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 1);
    fx_stop(&f);
}

static void test_busy_node_is_not_drained_and_drained_node_waits_for_tasks(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, 0);
    n.gpus[0].job_id = 7;
    n.gpus[0].utilization_pct = 90;
    assert_non_null(cluster_put_node(&f.c, &n));
    decide(&f, 10 * S);
    decide(&f, 1000 * S);
    assert_int_equal(count_type(&f.out, POOL_DRAIN), 0);
    /* Low utilisation with nothing waiting: drained, released once empty. */
    cluster_find_node(&f.c, 100)->gpus[0].utilization_pct = 5;
    decide(&f, 1001 * S);
    decide(&f, 1100 * S);
    assert_int_equal(count_type(&f.out, POOL_DRAIN), 1);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 0);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_DRAINING);
    cluster_find_node(&f.c, 100)->gpus[0].job_id = 0;
    decide(&f, 1101 * S);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 1);
    fx_stop(&f);
}

static void test_node_that_never_registers_is_failed_and_replaced(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_PROVISIONING, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    add_jobs(&f, 1, 1, 0);
    decide(&f, 60 * S);
    assert_int_equal(created(&f.out, 0), 0);
    decide(&f, 121 * S);
    assert_int_equal(count_type(&f.out, POOL_FAIL), 1);
    assert_int_equal(created(&f.out, 0), 1);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_FAILED);
    fx_stop(&f);
}

static void test_provider_backoff_holds_creation(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    f.a.state[0].create_not_before_ms = 30 * S;
    add_jobs(&f, 1, 1, 0);
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 0);
    decide(&f, 30 * S);
    assert_int_equal(created(&f.out, 0), 1);
    fx_stop(&f);
}

static void test_job_too_big_for_every_pool_creates_nothing(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 2, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    add_jobs(&f, 1, 8, 0);
    struct job j = fx_job(50, 1);
    snprintf(j.gpu_model, sizeof j.gpu_model, "A100*");
    assert_non_null(cluster_add_job(&f.c, &j));
    decide(&f, S);
    assert_int_equal(created(&f.out, 0), 0);
    fx_stop(&f);
}

static void test_draining_node_is_made_ready_again_when_jobs_arrive(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 2, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_DRAINING, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    struct job busy = fx_job(1, 1);
    assert_non_null(fx_add_running(&f.c, busy, 100, 0));
    add_jobs(&f, 1, 1, 0); /* fits the draining node's free GPU */
    decide(&f, 10 * S);
    assert_int_equal(count_type(&f.out, POOL_UNDRAIN), 1);
    assert_int_equal(created(&f.out, 0), 0);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_READY);
    /* Within the cooldown it is not drained again. */
    decide(&f, 11 * S);
    assert_int_equal(count_type(&f.out, POOL_DRAIN), 0);
    fx_stop(&f);
}

static void test_draining_node_too_small_stays_draining_and_a_node_is_created(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 2, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_DRAINING, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    assert_non_null(fx_add_running(&f.c, fx_job(1, 1), 100, 0));
    add_jobs(&f, 1, 2, 0); /* needs two free GPUs */
    decide(&f, 10 * S);
    assert_int_equal(count_type(&f.out, POOL_UNDRAIN), 0);
    assert_int_equal(created(&f.out, 0), 1);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_DRAINING);
    fx_stop(&f);
}

static void test_draining_node_whose_agent_dies_is_lost_and_its_jobs_requeued(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 2, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_DRAINING, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    struct job j = fx_job(1, 1);
    j.retries = 1;
    assert_non_null(fx_add_running(&f.c, j, 100, 0));
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    struct scheduler s;
    sched_init(&s, &cfg);
    struct action_list out;
    action_list_init(&out);
    for (int64_t t = 10; t <= 30; t++) /* the server checks every second or so */
        assert_int_equal(sched_check_nodes(&s, &f.c, t * S, &out), 0);
    assert_int_equal(sched_check_nodes(&s, &f.c, 31 * S, &out), 1);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_LOST);
    assert_int_equal(fx_count(&out, ACTION_REQUEUE, 1), 1);
    assert_int_equal(cluster_find_job(&f.c, 1)->state, JOB_PENDING);
    /* Lost with no tasks past boot_timeout: failed, so the provider deletes it. */
    decide(&f, 200 * S);
    assert_int_equal(count_type(&f.out, POOL_FAIL), 1);
    action_list_release(&out);
    sched_release(&s);
    fx_stop(&f);
}

/* 2024-03-11 is a Monday; times are UTC. */
#define MON_0000 (1710115200LL * 1000)
#define MIN (60 * S)

static void test_scheduled_window_keeps_nodes_warm_on_weekdays_9_to_18(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    f.pools[0].windows[0] = (struct pool_window){.days = 0x1f, .from_min = 9 * 60, .to_min = 18 * 60,
                                                 .min_nodes = 2};
    f.pools[0].nwindows = 1;
    fx_start(&f);
    assert_int_equal(pool_min_nodes_at(&f.pools[0], MON_0000 + 8 * 60 * MIN + 59 * MIN), 0);
    assert_int_equal(pool_min_nodes_at(&f.pools[0], MON_0000 + 9 * 60 * MIN), 2);
    assert_int_equal(pool_min_nodes_at(&f.pools[0], MON_0000 + 18 * 60 * MIN), 0);
    assert_int_equal(pool_min_nodes_at(&f.pools[0], MON_0000 + 4 * 1440 * MIN + 10 * 60 * MIN), 2); /* Fri */
    assert_int_equal(pool_min_nodes_at(&f.pools[0], MON_0000 + 5 * 1440 * MIN + 10 * 60 * MIN), 0); /* Sat */
    decide(&f, MON_0000 + 8 * 60 * MIN);
    assert_int_equal(created(&f.out, 0), 0);
    decide(&f, MON_0000 + 9 * 60 * MIN);
    assert_int_equal(created(&f.out, 0), 2);
    fx_stop(&f);
}

static void test_window_nodes_are_released_after_the_window_closes(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    f.pools[0].windows[0] = (struct pool_window){.days = 0x7f, .from_min = 9 * 60, .to_min = 18 * 60,
                                                 .min_nodes = 1};
    f.pools[0].nwindows = 1;
    f.pools[0].scale_down_window_s = 0;
    f.pools[0].cooldown_s = 0;
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, MON_0000);
    assert_non_null(cluster_put_node(&f.c, &n));
    decide(&f, MON_0000 + 17 * 60 * MIN);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 0);
    decide(&f, MON_0000 + 18 * 60 * MIN);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 1);
    fx_stop(&f);
}

static void test_window_past_midnight_covers_the_next_morning(void **state)
{
    (void)state;
    struct pool p = fx_pool("p", 1, 0, 4, 1000000);
    p.windows[0] = (struct pool_window){.days = 1, .from_min = 22 * 60, .to_min = 2 * 60, .min_nodes = 3};
    p.nwindows = 1;
    assert_int_equal(pool_min_nodes_at(&p, MON_0000 + 23 * 60 * MIN), 3);
    assert_int_equal(pool_min_nodes_at(&p, MON_0000 + 1440 * MIN + 60 * MIN), 3); /* Tue 01:00 */
    assert_int_equal(pool_min_nodes_at(&p, MON_0000 + 60 * MIN), 0);             /* Mon 01:00 */
}

static void test_step_adds_k_nodes_when_the_queue_is_long_once_per_cooldown(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 4, 0, 10, 1000000)}, .npools = 1};
    f.pools[0].steps[0] = (struct pool_step){.queue_length = 10, .add = 5};
    f.pools[0].nsteps = 1;
    f.pools[0].cooldown_s = 30;
    fx_start(&f);
    add_jobs(&f, 9, 1, 0); /* 9 jobs: bin packing asks for 3, no step */
    decide(&f, S);
    assert_int_equal(created(&f.out, 0), 3);
    fx_stop(&f);
    fx_start(&f);
    add_jobs(&f, 10, 1, 0); /* 10: the step asks for 5 at once */
    decide(&f, S);
    assert_int_equal(created(&f.out, 0), 5);
    /* Not again within the cooldown, nor beyond max_nodes. */
    for (int i = 0; i < 5; i++) {
        struct node n = fx_pool_node(100 + i, &f.pools[0], NODE_PROVISIONING, S);
        assert_non_null(cluster_put_node(&f.c, &n));
    }
    add_jobs(&f, 30, 1, 0);
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 5); /* bin packing: 40 GPUs wanted, 10 nodes max */
    fx_stop(&f);
}

static void test_step_on_wait_time(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 4, 0, 10, 1000000)}, .npools = 1};
    f.pools[0].steps[0] = (struct pool_step){.wait_s = 60, .add = 2};
    f.pools[0].nsteps = 1;
    f.pools[0].scale_up_delay_s = 3600; /* only the step acts */
    fx_start(&f);
    add_jobs(&f, 1, 1, 0);
    decide(&f, 59 * S);
    assert_int_equal(created(&f.out, 0), 0);
    decide(&f, 60 * S);
    assert_int_equal(created(&f.out, 0), 2);
    fx_stop(&f);
}

static void test_step_counts_the_nodes_it_already_has_booting(void **state)
{
    (void)state;
    /* 4 one-GPU jobs fit one 4-GPU node; the step wants 3 nodes coming. */
    struct fx f = {.pools = {fx_pool("p", 4, 0, 8, 1000000)}, .npools = 1};
    f.pools[0].steps[0] = (struct pool_step){.queue_length = 3, .add = 3};
    f.pools[0].nsteps = 1;
    f.pools[0].cooldown_s = 0;
    fx_start(&f);
    add_jobs(&f, 4, 1, 0);
    decide(&f, S);
    assert_int_equal(created(&f.out, 0), 3);
    for (int i = 0; i < 3; i++) {
        struct node n = fx_pool_node(100 + i, &f.pools[0], NODE_PROVISIONING, S);
        assert_non_null(cluster_put_node(&f.c, &n));
    }
    /* Still booting, the queue still long: no more nodes, pass after pass. */
    for (int t = 2; t < 10; t++) {
        decide(&f, t * S);
        assert_int_equal(created(&f.out, 0), 0);
    }
    /* With 2 of them booting, the step tops up to 3. */
    cluster_find_node(&f.c, 102)->state = NODE_FAILED;
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 1);
    fx_stop(&f);
}

/* --- gang jobs (nodes: k) --- */

static void add_gang(struct fx *f, int gpus, int nodes, int64_t submit_ms)
{
    struct job j = fx_job((int64_t)f->c.njobs + 1, gpus);
    j.max_nodes = nodes;
    j.submit_ms = submit_ms;
    assert_non_null(cluster_add_job(&f->c, &j));
}

static void test_gang_job_from_zero_creates_a_node_per_share(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 8, 0, 10, 8000000)}, .npools = 1};
    fx_start(&f);
    add_gang(&f, 16, 2, 0); /* 2 x 8 GPUs */
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 2);
    assert_int_equal(f.a.state[0].nodes_wanted, 2);
    assert_int_equal(f.a.state[0].pending_jobs, 1);
    assert_string_equal(f.a.state[0].held_back, "");
    fx_stop(&f);
}

static void test_gang_job_that_max_nodes_cannot_hold_creates_none_and_says_why(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 8, 0, 1, 8000000)}, .npools = 1};
    fx_start(&f);
    add_gang(&f, 16, 2, 0);
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 0);
    assert_string_equal(f.a.state[0].held_back,
                        "gang job 1 needs 2 more nodes (2 x 8 GPUs), room for 1 under max_nodes 1");
    fx_stop(&f);
}

static void test_gang_job_counts_nodes_that_exist_against_max_nodes(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 8, 0, 3, 8000000)}, .npools = 1};
    fx_start(&f);
    for (int64_t id = 100; id < 102; id++) { /* two full nodes: room for one more */
        struct node n = fx_pool_node(id, &f.pools[0], NODE_READY, 0);
        assert_non_null(cluster_put_node(&f.c, &n));
        assert_non_null(fx_add_running(&f.c, fx_job(id, 8), id, 0));
    }
    add_gang(&f, 16, 2, 0);
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 0);
    assert_non_null(strstr(f.a.state[0].held_back, "room for 1 under max_nodes 3"));
    fx_stop(&f);
}

static void test_gang_job_is_bin_packed_with_single_node_jobs(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 8, 0, 10, 8000000)}, .npools = 1};
    fx_start(&f);
    add_gang(&f, 12, 2, 0); /* 2 x 6: two nodes with 2 GPUs left on each ... */
    add_jobs(&f, 2, 2, 0);  /* ... where these go ... */
    add_jobs(&f, 1, 4, 0);  /* ... and this needs a third */
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 3);
    fx_stop(&f);
}

static void test_gang_job_takes_room_on_ready_nodes_first(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 8, 0, 10, 8000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    assert_non_null(fx_add_running(&f.c, fx_job(100, 8), 100, 0)); /* it is full */
    struct node idle = fx_pool_node(101, &f.pools[0], NODE_READY, 0);
    assert_non_null(cluster_put_node(&f.c, &idle));
    add_gang(&f, 16, 2, 0);
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 1);
    fx_stop(&f);
}

static void test_gang_job_takes_the_fewest_nodes_whose_shares_a_pool_fits(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 4, 0, 10, 4000000)}, .npools = 1};
    fx_start(&f);
    add_gang(&f, 16, 4, 0); /* 2 x 8 fits no node, 16 is not split in 3: 4 x 4 */
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 4);
    fx_stop(&f);
}

static void test_gang_job_one_node_holds_gets_one_node(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 8, 0, 10, 8000000)}, .npools = 1};
    fx_start(&f);
    add_gang(&f, 8, 2, 0); /* the scheduler tries one node first */
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 1);
    fx_stop(&f);
}

static void test_gang_job_waits_for_scale_up_delay(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 8, 0, 10, 8000000)}, .npools = 1};
    f.pools[0].scale_up_delay_s = 30;
    fx_start(&f);
    add_gang(&f, 16, 2, 0);
    decide(&f, 29 * S);
    assert_int_equal(created(&f.out, 0), 0);
    decide(&f, 30 * S);
    assert_int_equal(created(&f.out, 0), 2);
    fx_stop(&f);
}

static void test_gang_job_starts_on_the_nodes_created_for_it_once_ready(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 8, 0, 10, 8000000)}, .npools = 1};
    fx_start(&f);
    add_gang(&f, 16, 2, 0);
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 2);
    /* The shell creates them; they boot and register. */
    for (int64_t id = 100; id < 102; id++) {
        struct node n = fx_pool_node(id, &f.pools[0], NODE_PROVISIONING, 10 * S);
        assert_non_null(cluster_put_node(&f.c, &n));
    }
    decide(&f, 20 * S);
    assert_int_equal(created(&f.out, 0), 0); /* booting nodes are its capacity */
    for (int64_t id = 100; id < 102; id++) {
        cluster_find_node(&f.c, id)->state = NODE_READY;
        cluster_find_node(&f.c, id)->last_heartbeat_ms = 60 * S;
    }
    struct sched_config cfg;
    sched_config_defaults(&cfg);
    struct scheduler s;
    sched_init(&s, &cfg);
    struct action_list out;
    action_list_init(&out);
    assert_int_equal(sched_pass(&s, &f.c, 60 * S, &out), 1);
    assert_int_equal(fx_count(&out, ACTION_START, 1), 1);
    struct job *gang = cluster_find_job(&f.c, 1);
    assert_int_equal(gang->state, JOB_STARTING);
    assert_int_equal(gang->nparts, 1); /* a second node */
    assert_int_equal(gang->ngpus_assigned + gang->parts[0].ngpus, 16);
    decide(&f, 61 * S);
    assert_int_equal(created(&f.out, 0), 0);
    assert_int_equal(count_type(&f.out, POOL_DRAIN), 0);
    action_list_release(&out);
    sched_release(&s);
    fx_stop(&f);
}

/* quiet_until_ms: a look that decided nothing says when the next one on
 * the same cluster could decide something (the simulator skips the looks
 * in between). */
static void test_a_quiet_look_says_when_scale_up_delay_runs_out(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 10, 1000000)}, .npools = 1};
    f.pools[0].scale_up_delay_s = 5;
    fx_start(&f);
    add_jobs(&f, 1, 1, 700);
    decide(&f, 1 * S);
    assert_int_equal(f.out.len, 0);
    assert_int_equal(f.a.quiet_until_ms, 5 * S + 700);
    decide(&f, 5 * S + 700);
    assert_int_equal(created(&f.out, 0), 1);
    assert_int_equal(f.a.quiet_until_ms, 5 * S + 700); /* it acted: look again */
    fx_stop(&f);
}

static void test_a_quiet_look_says_when_an_idle_window_or_a_boot_timeout_runs_out(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node idle = fx_pool_node(100, &f.pools[0], NODE_READY, 0);
    assert_non_null(cluster_put_node(&f.c, &idle));
    decide(&f, 100 * S); /* idle from now: released at 160 s */
    assert_int_equal(f.out.len, 0);
    assert_int_equal(f.a.quiet_until_ms, 160 * S);
    struct node booting = fx_pool_node(101, &f.pools[0], NODE_PROVISIONING, 0);
    assert_non_null(cluster_put_node(&f.c, &booting));
    decide(&f, 110 * S); /* failed once booting over 120 s */
    assert_int_equal(f.out.len, 0);
    assert_int_equal(f.a.quiet_until_ms, 120 * S + 1);
    fx_stop(&f);
}

static void test_a_look_with_nothing_that_depends_on_time_is_quiet_for_ever(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 1, 1, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    add_jobs(&f, 3, 2, 0); /* too big for the pool: nothing to do, ever */
    decide(&f, 10 * S); /* starts the idle clock: its window ends at 70 s */
    decide(&f, 100 * S); /* at min_nodes: kept */
    assert_int_equal(f.out.len, 0);
    assert_true(f.a.quiet_until_ms == INT64_MAX);
    fx_stop(&f);
}

static void test_scheduled_windows_make_every_look_count(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    f.pools[0].windows[0] = (struct pool_window){.days = 0x7f, .from_min = 9 * 60,
                                                 .to_min = 18 * 60, .min_nodes = 1};
    f.pools[0].nwindows = 1;
    fx_start(&f);
    decide(&f, 0);
    assert_int_equal(f.out.len, 0);
    assert_int_equal(f.a.quiet_until_ms, 0);
    fx_stop(&f);
}

/* The promise itself: over 40 minutes of looks every second on a cluster
 * that changes only at a few moments (jobs arrive, a node registers, a job
 * ends), every look made before the last quiet look's quiet_until_ms, with
 * no change in between, decides nothing. */
static void test_no_look_before_quiet_until_decides_anything(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 4, 1, 6, 1000000), fx_pool("q", 8, 0, 2, 3000000)},
                   .npools = 2};
    f.pools[0].scale_up_delay_s = 45;
    f.pools[0].scale_down_window_s = 300;
    f.pools[0].cooldown_s = 200;
    f.pools[0].steps[0] = (struct pool_step){.wait_s = 400, .add = 2};
    f.pools[0].steps[1] = (struct pool_step){.queue_length = 6, .add = 1};
    f.pools[0].nsteps = 2;
    f.pools[1].scale_up_delay_s = 10;
    fx_start(&f);
    int64_t promise = -1; /* quiet_until_ms of the last quiet look since a change */
    int acted = 0, quiet_checked = 0;
    for (int64_t t = 0; t <= 2400 * S; t += S) {
        bool change = true;
        if (t == 30 * S)
            add_jobs(&f, 5, 3, t);
        else if (t == 100 * S)
            add_jobs(&f, 2, 8, t);
        else if (t == 700 * S) {
            for (size_t i = 0; i < f.c.nnodes; i++)
                if (f.c.nodes[i].state == NODE_PROVISIONING)
                    f.c.nodes[i].state = NODE_READY; /* registered */
        } else if (t == 900 * S) {
            while (f.c.njobs > 0)
                cluster_remove_job(&f.c, f.c.jobs[0].id); /* all ended */
        } else
            change = false;
        if (change)
            promise = -1;
        /* Nodes the last look asked for come, booting, as the shell adds them. */
        decide(&f, t);
        if (promise >= 0 && t < promise) {
            assert_int_equal(f.out.len, 0);
            quiet_checked++;
        }
        for (size_t i = 0; i < f.out.len; i++)
            for (int k = 0; f.out.items[i].type == POOL_CREATE && k < f.out.items[i].count; k++) {
                struct node n = fx_pool_node(200 + (int64_t)f.c.nnodes,
                                             &f.pools[f.out.items[i].pool], NODE_PROVISIONING, t);
                assert_non_null(cluster_put_node(&f.c, &n));
            }
        acted += f.out.len > 0;
        promise = f.out.len ? -1 : f.a.quiet_until_ms;
    }
    assert_true(acted >= 4); /* creates, steps, fails, releases happened */
    assert_true(quiet_checked > 1000);
    fx_stop(&f);
}

/* A demand index (demand.h) kept beside the cluster: the same decisions as
 * the scan, look after look, while jobs of many shapes (gangs, a model no
 * pool has, spot-only pools) come and go and new nodes register. */
struct twin {
    struct fx scan, by_shape;
    struct demand d;
};

static void twin_add_job(struct twin *t, struct job j)
{
    assert_non_null(cluster_add_job(&t->scan.c, &j));
    const struct job *in = cluster_add_job(&t->by_shape.c, &j);
    assert_non_null(in);
    assert_int_equal(demand_add(&t->d, in), 0);
}

static void twin_remove_job(struct twin *t, int64_t id)
{
    const struct job *j = cluster_find_job(&t->by_shape.c, id);
    if (!j)
        return;
    demand_remove(&t->d, j);
    cluster_remove_job(&t->by_shape.c, id);
    cluster_remove_job(&t->scan.c, id);
}

static void assert_same_action_lists(const struct pool_action_list *x, const struct pool_action_list *y)
{
    assert_int_equal(x->len, y->len);
    for (size_t i = 0; i < x->len; i++) {
        assert_int_equal(x->items[i].type, y->items[i].type);
        assert_int_equal(x->items[i].pool, y->items[i].pool);
        assert_int_equal(x->items[i].count, y->items[i].count);
        assert_int_equal(x->items[i].node_id, y->items[i].node_id);
        assert_string_equal(x->items[i].reason, y->items[i].reason);
    }
}

static void assert_same_actions(const struct twin *t)
{
    assert_same_action_lists(&t->scan.out, &t->by_shape.out);
    for (int p = 0; p < t->scan.npools; p++) {
        assert_int_equal(t->scan.a.state[p].pending_jobs, t->by_shape.a.state[p].pending_jobs);
        assert_int_equal(t->scan.a.state[p].nodes_wanted, t->by_shape.a.state[p].nodes_wanted);
        assert_string_equal(t->scan.a.state[p].held_back, t->by_shape.a.state[p].held_back);
    }
    assert_true(t->scan.a.quiet_until_ms == t->by_shape.a.quiet_until_ms);
}

static void test_a_demand_index_gives_the_scans_decisions(void **state)
{
    (void)state;
    static struct twin t; /* large: off the stack */
    memset(&t, 0, sizeof t);
    struct pool pools[3] = {fx_pool("big", 8, 0, 3, 8000000), fx_pool("small", 4, 0, 2, 3000000),
                            fx_pool("spot", 8, 0, 2, 2000000)};
    pools[0].scale_up_delay_s = 20;
    pools[2].billing = BILLING_SPOT;
    for (int k = 0; k < 2; k++) {
        struct fx *f = k ? &t.by_shape : &t.scan;
        memcpy(f->pools, pools, sizeof pools);
        f->npools = 3;
        fx_start(f);
    }
    demand_init(&t.d);
    t.by_shape.a.demand = &t.d;
    unsigned seed = 7;
    int64_t id = 1, node_id = 100;
    int looks_that_acted = 0;
    for (int round = 0; round < 60; round++) {
        int64_t now = round * 10 * S;
        for (int k = 0; k < 6; k++) { /* arrivals: mixed shapes */
            seed = seed * 1103515245 + 12345;
            static const int gpus[] = {1, 1, 2, 4, 8, 16, 3, 32};
            struct job j = fx_job(id++, gpus[(seed >> 16) % 8]);
            j.submit_ms = now - (int64_t)((seed >> 8) % 5000);
            j.max_nodes = j.gpus > 8 ? (int)((seed >> 4) % 4) + 1 : 0;
            j.preemptible = (seed >> 12) % 3 == 0;
            if ((seed >> 20) % 11 == 0)
                snprintf(j.gpu_model, sizeof j.gpu_model, "A100"); /* no pool has it */
            twin_add_job(&t, j);
        }
        for (int k = 0; k < 3; k++) { /* some leave (started elsewhere, cancelled) */
            seed = seed * 1103515245 + 12345;
            twin_remove_job(&t, 1 + (int64_t)((seed >> 16) % (uint64_t)id));
        }
        decide(&t.scan, now);
        decide(&t.by_shape, now);
        assert_same_actions(&t);
        looks_that_acted += t.scan.out.len > 0;
        /* What was created registers at once, in both. */
        for (size_t i = 0; i < t.scan.out.len; i++)
            for (int k = 0; t.scan.out.items[i].type == POOL_CREATE && k < t.scan.out.items[i].count;
                 k++) {
                struct node n = fx_pool_node(node_id++, &pools[t.scan.out.items[i].pool], NODE_READY,
                                             now);
                assert_non_null(cluster_put_node(&t.scan.c, &n));
                assert_non_null(cluster_put_node(&t.by_shape.c, &n));
            }
    }
    assert_true(looks_that_acted >= 3);
    assert_true(demand_count(&t.d) > 100); /* a deep queue by the end */
    demand_release(&t.d);
    fx_stop(&t.scan);
    fx_stop(&t.by_shape);
}

/* A shape left out after its first hopeless job comes back when new nodes
 * come: a non-preemptible job finds no room (its pool at max_nodes), a
 * preemptible one gets a new spot node, and the next non-preemptible job
 * is looked at again as the scan looks at it, and, as there, not counted
 * on the spot node's room (placement will not put it there): one node, no
 * step (a step needs two jobs waiting for the spot pool). */
static void test_a_demand_index_takes_a_left_out_shape_back_when_nodes_come(void **state)
{
    (void)state;
    static struct twin t;
    memset(&t, 0, sizeof t);
    struct pool pools[2] = {fx_pool("od", 2, 0, 1, 8000000), fx_pool("spot", 8, 0, 4, 2000000)};
    pools[1].billing = BILLING_SPOT;
    pools[1].steps[0] = (struct pool_step){.queue_length = 2, .add = 3};
    pools[1].nsteps = 1;
    for (int k = 0; k < 2; k++) {
        struct fx *f = k ? &t.by_shape : &t.scan;
        memcpy(f->pools, pools, sizeof pools);
        f->npools = 2;
        fx_start(f);
        struct node n = fx_pool_node(100, &pools[0], NODE_READY, 0);
        n.gpus[0].job_id = n.gpus[1].job_id = 999; /* full */
        assert_non_null(cluster_put_node(&f->c, &n));
    }
    demand_init(&t.d);
    t.by_shape.a.demand = &t.d;
    struct job j = fx_job(1, 1);
    twin_add_job(&t, j);
    j = fx_job(2, 1);
    j.preemptible = true;
    twin_add_job(&t, j);
    twin_add_job(&t, fx_job(3, 1));
    decide(&t.scan, 10 * S);
    decide(&t.by_shape, 10 * S);
    assert_same_actions(&t);
    assert_int_equal(created(&t.scan.out, 1), 1); /* for job 2 only */
    assert_non_null(strstr(t.scan.a.state[1].held_back, "job 1 "));
    demand_release(&t.d);
    fx_stop(&t.scan);
    fx_stop(&t.by_shape);
}

/* Room on a spot node that is still to come (created in this look, or
 * booting) is not counted for a non-preemptible job: placement will not
 * put it there, so it gets an on-demand node of its own. */
static void test_room_on_a_coming_spot_node_is_not_counted_for_a_non_preemptible_job(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("od", 8, 0, 2, 16000000), fx_pool("spot", 8, 0, 2, 4000000)},
                   .npools = 2};
    f.pools[1].billing = BILLING_SPOT;
    fx_start(&f);
    add_jobs(&f, 2, 1, 0);
    f.c.jobs[0].preemptible = true; /* job 1: a new spot node (cheaper) ... */
    f.c.jobs[1].submit_ms = 1 * S;  /* job 2 (after it): not preemptible */
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 1), 1);
    assert_int_equal(created(&f.out, 0), 1); /* ... and an on-demand one for job 2 */

    /* The same with the spot node booting. */
    struct fx g = {.pools = {f.pools[0], f.pools[1]}, .npools = 2};
    fx_start(&g);
    struct node n = fx_pool_node(100, &g.pools[1], NODE_PROVISIONING, 0);
    n.spot = true;
    assert_non_null(cluster_put_node(&g.c, &n));
    add_jobs(&g, 1, 1, 0);
    decide(&g, 10 * S);
    assert_int_equal(created(&g.out, 1), 0);
    assert_int_equal(created(&g.out, 0), 1);
    fx_stop(&f);
    fx_stop(&g);
}

/* A pool of spot nodes only: a non-preemptible job gets no node, and the
 * pool's held_back says why; a preemptible one gets a node, and the
 * non-preemptible job waiting beside it does not count towards a step. */
static void test_a_spot_pool_scales_up_only_for_jobs_that_may_run_on_spot(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("spot", 8, 0, 4, 4000000)}, .npools = 1};
    f.pools[0].billing = BILLING_SPOT;
    f.pools[0].steps[0] = (struct pool_step){.queue_length = 2, .add = 3};
    f.pools[0].nsteps = 1;
    fx_start(&f);
    add_jobs(&f, 1, 2, 0); /* job 1: not preemptible */
    decide(&f, 10 * S);
    assert_int_equal(created(&f.out, 0), 0);
    assert_string_equal(f.a.state[0].held_back,
                        "job 1 (2 GPUs) is not preemptible and this pool's nodes are spot "
                        "(its queue would need allow_spot: true)");

    add_jobs(&f, 1, 2, 0); /* job 2, as old: preemptible */
    f.c.jobs[1].preemptible = true;
    decide(&f, 20 * S);
    assert_int_equal(created(&f.out, 0), 1); /* one node for job 2, no step */
    assert_non_null(strstr(f.a.state[0].held_back, "job 1 "));

    /* A queue with allow_spot lets job 1 on spot too: it takes the room
     * on the node coming for job 2. */
    struct queue_config q;
    memset(&q, 0, sizeof q);
    q.allow_spot = true;
    f.c.jobs[0].rules = &q;
    decide(&f, 60 * S);
    assert_true(created(&f.out, 0) >= 1);
    assert_string_equal(f.a.state[0].held_back, "");
    fx_stop(&f);
}

/* pending_jobs counts the jobs that wait for a pool: a non-preemptible
 * job does not wait for a spot pool, nor a job for a pool its queue may
 * not use; the same with a demand index kept beside the cluster. */
static void test_pending_jobs_counts_only_jobs_the_spot_rule_and_queue_let_on_the_pool(void **state)
{
    (void)state;
    for (int indexed = 0; indexed < 2; indexed++) {
        struct fx f = {.pools = {fx_pool("od", 8, 0, 0, 8000000), fx_pool("spot", 8, 0, 0, 2000000)},
                       .npools = 2};
        f.pools[1].billing = BILLING_SPOT; /* max_nodes 0 in both: nothing is created */
        fx_start(&f);
        struct demand d;
        demand_init(&d);
        if (indexed)
            f.a.demand = &d;
        struct queue_config spot_only;
        memset(&spot_only, 0, sizeof spot_only);
        spot_only.npools = 1;
        snprintf(spot_only.pools[0], sizeof spot_only.pools[0], "spot");
        struct job jobs[3] = {fx_job(1, 2), fx_job(2, 2), fx_job(3, 2)};
        jobs[1].preemptible = true;
        jobs[2].preemptible = true;
        jobs[2].rules = &spot_only;
        for (int i = 0; i < 3; i++) {
            const struct job *in = cluster_add_job(&f.c, &jobs[i]);
            assert_non_null(in);
            assert_int_equal(demand_add(&d, in), 0);
        }
        decide(&f, 10 * S);
        assert_int_equal(f.a.state[0].pending_jobs, 2); /* jobs 1 and 2 */
        assert_int_equal(f.a.state[1].pending_jobs, 2); /* jobs 2 and 3 */
        demand_release(&d);
        fx_stop(&f);
    }
}

/* A ready node's free GPUs are read from the cluster's placement index when
 * one is attached and covers the nodes (the simulator keeps one between
 * passes): the same decisions as counting each GPU, and an index that no
 * longer covers the nodes (one was added since) is not read. */
static void test_free_gpus_from_an_attached_index_give_the_same_decisions(void **state)
{
    (void)state;
    struct fx f[2];
    struct placement_index idx;
    placement_index_init(&idx);
    for (int k = 0; k < 2; k++) {
        f[k] = (struct fx){.pools = {fx_pool("p", 4, 0, 6, 4000000)}, .npools = 1};
        fx_start(&f[k]);
        static const int free_gpus[] = {0, 1, 2, 2, 3};
        for (int i = 0; i < 5; i++) {
            struct node n = fx_pool_node(100 + i, &f[k].pools[0], i == 4 ? NODE_DRAINING : NODE_READY, 0);
            for (int g = free_gpus[i]; g < 4; g++)
                n.gpus[g].job_id = 900 + i;
            assert_non_null(cluster_put_node(&f[k].c, &n));
        }
        /* Room for all on the ready nodes and the draining one: no node
         * created, the draining one made ready again for the 3-GPU job. */
        static const int gpus[] = {3, 2, 2, 1};
        for (int j = 0; j < 4; j++)
            add_jobs(&f[k], 1, gpus[j], j * S);
    }
    assert_int_equal(placement_index_build(&idx, &f[1].c, NULL, NULL), 0);
    f[1].c.index = &idx;
    for (int round = 0; round < 2; round++) {
        decide(&f[0], 60 * S + round);
        decide(&f[1], 60 * S + round);
        assert_int_equal(created(&f[0].out, 0), 0);
        assert_int_equal(count_type(&f[0].out, POOL_UNDRAIN), round == 0);
        assert_int_equal(f[0].out.len, f[1].out.len);
        for (size_t i = 0; i < f[0].out.len; i++) {
            assert_int_equal(f[0].out.items[i].type, f[1].out.items[i].type);
            assert_int_equal(f[0].out.items[i].count, f[1].out.items[i].count);
            assert_int_equal(f[0].out.items[i].node_id, f[1].out.items[i].node_id);
            assert_string_equal(f[0].out.items[i].reason, f[1].out.items[i].reason);
        }
        /* A node joins both (the index no longer covers the nodes). */
        for (int k = 0; k < 2; k++) {
            struct node n = fx_pool_node(200, &f[k].pools[0], NODE_READY, 0);
            n.gpus[0].job_id = 950;
            assert_non_null(cluster_put_node(&f[k].c, &n));
        }
    }
    f[1].c.index = NULL;
    placement_index_release(&idx);
    fx_stop(&f[0]);
    fx_stop(&f[1]);
}

/* Node i's pool index as the simulator keeps it for the autoscaler. */
static void give_node_pools(struct fx *f, int *pools, size_t n)
{
    f->a.node_pools = pools;
    f->a.nnode_pools = n;
}

static void test_given_node_pools_decide_as_the_pools_names_do(void **state)
{
    (void)state;
    /* f[0] finds each node's pool by name, f[1] is given them */
    struct fx f[2];
    int given[4] = {1, 0, 0, 0};
    for (int k = 0; k < 2; k++) {
        f[k] = (struct fx){.pools = {fx_pool("cheap", 2, 0, 4, 1000000),
                                     fx_pool("big", 8, 1, 4, 8000000)},
                           .npools = 2};
        fx_start(&f[k]);
        for (int64_t i = 0; i < 4; i++) {
            struct node n = fx_pool_node(100 + i, &f[k].pools[given[i]], NODE_READY, 0);
            assert_non_null(cluster_put_node(&f[k].c, &n));
        }
        assert_non_null(fx_add_running(&f[k].c, fx_job(900, 2), 103, 0)); /* cheap: busy */
        add_jobs(&f[k], 2, 8, 0); /* one fits the idle big node, one needs a new one */
    }
    give_node_pools(&f[1], given, 4);
    int64_t at[] = {10 * S, 30 * S, 100 * S, 200 * S};
    for (size_t t = 0; t < sizeof at / sizeof *at; t++) {
        decide(&f[0], at[t]);
        decide(&f[1], at[t]);
        assert_same_action_lists(&f[0].out, &f[1].out);
        if (t == 0)
            assert_int_equal(created(&f[1].out, 1), 1);
    }
    /* the idle cheap nodes went; the big one is the pool's minimum; the
     * busy one waits for its task */
    assert_int_equal(cluster_find_node(&f[1].c, 100)->state, NODE_READY);
    assert_int_equal(cluster_find_node(&f[1].c, 101)->state, NODE_RELEASED);
    assert_int_not_equal(cluster_find_node(&f[1].c, 103)->state, NODE_RELEASED);
    fx_stop(&f[0]);
    fx_stop(&f[1]);
}

static void test_a_node_given_no_pool_is_no_pools_to_release(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    struct node n = fx_pool_node(100, &f.pools[0], NODE_READY, 0);
    assert_non_null(cluster_put_node(&f.c, &n));
    int given[1] = {-1}; /* the caller's word goes over the node's name */
    give_node_pools(&f, given, 1);
    decide(&f, 100 * S);
    decide(&f, 1000 * S);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 0);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_READY);
    fx_stop(&f);
}

static void test_a_node_past_the_given_pools_is_found_by_its_pools_name(void **state)
{
    (void)state;
    struct fx f = {.pools = {fx_pool("p", 1, 0, 4, 1000000)}, .npools = 1};
    fx_start(&f);
    for (int64_t i = 0; i < 2; i++) {
        struct node n = fx_pool_node(100 + i, &f.pools[0], NODE_READY, 0);
        assert_non_null(cluster_put_node(&f.c, &n));
    }
    int given[1] = {-1}; /* node 101 joined after the caller's array was made */
    give_node_pools(&f, given, 1);
    decide(&f, 100 * S); /* idle from now */
    decide(&f, 160 * S);
    assert_int_equal(count_type(&f.out, POOL_RELEASE), 1);
    assert_int_equal(f.out.items[0].node_id, 101);
    assert_int_equal(cluster_find_node(&f.c, 100)->state, NODE_READY);
    fx_stop(&f);
}

static void test_a_node_of_another_shape_than_its_pool_differs(void **state)
{
    (void)state;
    struct pool p;
    pool_defaults(&p);
    snprintf(p.name, sizeof p.name, "elastic");
    snprintf(p.gpu_model, sizeof p.gpu_model, "H200");
    p.gpus_per_node = 1;
    p.gpu_memory_mib = FX_H200_MIB;
    char why[256] = "";
    struct node n = fx_h200_node(1, 1);
    assert_false(pool_node_differs(&p, &n, why, sizeof why));
    snprintf(n.gpus[0].name, sizeof n.gpus[0].name, "NVIDIA H200"); /* as NVML names it */
    n.gpus[0].memory_total_mib = FX_H200_MIB - 600;                 /* a driver's reserve */
    assert_false(pool_node_differs(&p, &n, why, sizeof why));
    n = fx_h200_node(1, 4);
    assert_true(pool_node_differs(&p, &n, why, sizeof why));
    assert_non_null(strstr(why, "has 4 GPUs"));
    assert_non_null(strstr(why, "gpus_per_node"));
    n = fx_node(1, 1, "A100", 81920);
    assert_true(pool_node_differs(&p, &n, why, sizeof why));
    assert_non_null(strstr(why, "A100"));
    /* real GPUs' names hold the config's short model as a word: a pool of
     * "A100" took no A100 (memory, from the H200 default, is not compared) */
    static const struct {
        const char *model, *name;
        bool same;
    } names[] = {
        {"A100", "NVIDIA A100-SXM4-80GB", true}, {"H100", "NVIDIA H100 80GB HBM3", true},
        {"V100", "Tesla V100-SXM2-16GB", true},  {"a100", "NVIDIA A100-PCIE-40GB", true},
        {"A10", "NVIDIA A100-SXM4-80GB", false}, {"H100", "NVIDIA GH100", false},
        {"A100*", "A100-SXM4-80GB", true},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p.gpu_model, sizeof p.gpu_model, "%s", names[i].model);
        n = fx_node(1, 1, names[i].name, 40960);
        assert_int_equal(pool_node_differs(&p, &n, why, sizeof why), !names[i].same);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_from_zero_creates_exactly_the_bin_packed_nodes),
        cmocka_unit_test(test_a_node_drained_by_gpu_faults_is_replaced_not_undrained),
        cmocka_unit_test(test_a_node_failed_by_gpu_faults_is_failed_once_its_tasks_end),
        cmocka_unit_test(test_a_node_drained_by_its_probe_is_kept_until_boot_timeout_then_failed),
        cmocka_unit_test(test_never_creates_past_max_nodes),
        cmocka_unit_test(test_booting_nodes_count_as_capacity),
        cmocka_unit_test(test_waits_for_scale_up_delay),
        cmocka_unit_test(test_cheapest_pool_per_gpu_hour_wins_then_boot_time),
        cmocka_unit_test(test_a_pools_image_pull_time_counts_in_its_boot_time),
        cmocka_unit_test(test_falls_back_to_a_pool_that_fits_or_has_room),
        cmocka_unit_test(test_keeps_min_nodes_from_zero),
        cmocka_unit_test(test_idle_node_is_released_only_after_the_window),
        cmocka_unit_test(test_a_node_running_a_job_that_asked_for_no_gpu_cpu_or_memory_is_kept),
        cmocka_unit_test(test_jobs_their_queue_cap_holds_back_get_no_nodes),
        cmocka_unit_test(test_a_free_node_named_as_nvml_names_it_serves_a_model_glob),
        cmocka_unit_test(test_never_scales_below_min_nodes),
        cmocka_unit_test(test_cooldown_after_scale_up_delays_scale_down),
        cmocka_unit_test(test_busy_node_is_not_drained_and_drained_node_waits_for_tasks),
        cmocka_unit_test(test_node_that_never_registers_is_failed_and_replaced),
        cmocka_unit_test(test_provider_backoff_holds_creation),
        cmocka_unit_test(test_job_too_big_for_every_pool_creates_nothing),
        cmocka_unit_test(test_draining_node_is_made_ready_again_when_jobs_arrive),
        cmocka_unit_test(test_draining_node_too_small_stays_draining_and_a_node_is_created),
        cmocka_unit_test(test_draining_node_whose_agent_dies_is_lost_and_its_jobs_requeued),
        cmocka_unit_test(test_scheduled_window_keeps_nodes_warm_on_weekdays_9_to_18),
        cmocka_unit_test(test_window_nodes_are_released_after_the_window_closes),
        cmocka_unit_test(test_window_past_midnight_covers_the_next_morning),
        cmocka_unit_test(test_step_adds_k_nodes_when_the_queue_is_long_once_per_cooldown),
        cmocka_unit_test(test_step_on_wait_time),
        cmocka_unit_test(test_step_counts_the_nodes_it_already_has_booting),
        cmocka_unit_test(test_gang_job_from_zero_creates_a_node_per_share),
        cmocka_unit_test(test_gang_job_that_max_nodes_cannot_hold_creates_none_and_says_why),
        cmocka_unit_test(test_gang_job_counts_nodes_that_exist_against_max_nodes),
        cmocka_unit_test(test_gang_job_is_bin_packed_with_single_node_jobs),
        cmocka_unit_test(test_gang_job_takes_room_on_ready_nodes_first),
        cmocka_unit_test(test_gang_job_takes_the_fewest_nodes_whose_shares_a_pool_fits),
        cmocka_unit_test(test_gang_job_one_node_holds_gets_one_node),
        cmocka_unit_test(test_gang_job_waits_for_scale_up_delay),
        cmocka_unit_test(test_gang_job_starts_on_the_nodes_created_for_it_once_ready),
        cmocka_unit_test(test_a_quiet_look_says_when_scale_up_delay_runs_out),
        cmocka_unit_test(test_a_quiet_look_says_when_an_idle_window_or_a_boot_timeout_runs_out),
        cmocka_unit_test(test_a_look_with_nothing_that_depends_on_time_is_quiet_for_ever),
        cmocka_unit_test(test_scheduled_windows_make_every_look_count),
        cmocka_unit_test(test_no_look_before_quiet_until_decides_anything),
        cmocka_unit_test(test_a_demand_index_gives_the_scans_decisions),
        cmocka_unit_test(
            test_pending_jobs_counts_only_jobs_the_spot_rule_and_queue_let_on_the_pool),
        cmocka_unit_test(test_a_demand_index_takes_a_left_out_shape_back_when_nodes_come),
        cmocka_unit_test(test_room_on_a_coming_spot_node_is_not_counted_for_a_non_preemptible_job),
        cmocka_unit_test(test_a_spot_pool_scales_up_only_for_jobs_that_may_run_on_spot),
        cmocka_unit_test(test_free_gpus_from_an_attached_index_give_the_same_decisions),
        cmocka_unit_test(test_given_node_pools_decide_as_the_pools_names_do),
        cmocka_unit_test(test_a_node_given_no_pool_is_no_pools_to_release),
        cmocka_unit_test(test_a_node_past_the_given_pools_is_found_by_its_pools_name),
        cmocka_unit_test(test_a_node_of_another_shape_than_its_pool_differs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
