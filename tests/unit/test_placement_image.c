/* Unit tests for the image-locality preference (src/core/placement_image.c,
 * image.c) through a real scheduling pass with each strategy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/image.h"
#include "core/placement.h"
#include "core/sched.h"

#include "cluster_fixture.h"

static struct cluster c;

static int setup(void **state)
{
    (void)state;
    cluster_init(&c);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cluster_release(&c);
    return 0;
}

static struct node *add_node(int64_t id, int ngpus, const char *image)
{
    struct node n = fx_h200_node(id, ngpus);
    if (image)
        image_node_set(&n, &image, 1);
    struct node *stored = cluster_put_node(&c, &n);
    assert_non_null(stored);
    return stored;
}

static struct job *add_job(int64_t id, int gpus, const char *image)
{
    struct job j = fx_job(id, gpus);
    j.image_key = image_key(image);
    struct job *stored = cluster_add_job(&c, &j);
    assert_non_null(stored);
    return stored;
}

/* One pass with strategy ops; returns the node the job was started on (0: none). */
static int64_t placed_on(const struct placement_ops *ops, int64_t job_id)
{
    struct sched_config sc;
    sched_config_defaults(&sc);
    sc.placement = ops;
    struct scheduler s;
    sched_init(&s, &sc);
    struct action_list out;
    action_list_init(&out);
    assert_int_equal(sched_pass(&s, &c, 1000, &out) >= 0, 1);
    const struct action *a = fx_find(&out, ACTION_START, job_id);
    int64_t node = a ? a->node_id : 0;
    action_list_release(&out);
    sched_release(&s);
    return node;
}

static void test_every_strategy_prefers_the_node_that_holds_the_image(void **state)
{
    (void)state;
    const struct placement_ops *all[] = {&placement_binpack, &placement_spread,
                                         &placement_roundrobin, &placement_loadaware};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        cluster_release(&c);
        cluster_init(&c);
        /* node 1 is what every strategy picks first on its own (lowest id,
         * same shape); node 3 holds the image */
        add_node(1, 4, NULL);
        add_node(2, 4, "other:1");
        add_node(3, 4, "localhost/tide-test:1");
        add_job(10, 1, "localhost/tide-test:1");
        assert_int_equal(placed_on(all[i], 10), 3);
    }
}

static void test_a_job_without_image_keeps_the_strategys_choice(void **state)
{
    (void)state;
    add_node(1, 4, NULL);
    add_node(2, 4, "localhost/tide-test:1");
    add_job(10, 1, NULL);
    assert_int_equal(placed_on(&placement_binpack, 10), 1);
}

static void test_the_image_is_a_preference_not_a_wait(void **state)
{
    (void)state;
    add_node(1, 4, NULL);
    struct node *cached = add_node(2, 2, "localhost/tide-test:1");
    /* the node with the image is full: the job runs elsewhere now */
    for (int g = 0; g < cached->ngpus; g++)
        cached->gpus[g].job_id = 999;
    add_job(10, 1, "localhost/tide-test:1");
    assert_int_equal(placed_on(&placement_binpack, 10), 1);
}

static void test_among_nodes_with_the_image_the_strategys_order_decides(void **state)
{
    (void)state;
    add_node(1, 8, NULL);
    add_node(2, 8, "localhost/tide-test:1");
    struct node *busy = add_node(3, 8, "localhost/tide-test:1");
    for (int g = 0; g < 6; g++)
        busy->gpus[g].job_id = 999;
    add_job(10, 1, "localhost/tide-test:1");
    /* binpack fills the busier of the two nodes holding the image */
    assert_int_equal(placed_on(&placement_binpack, 10), 3);
}

static void test_node_image_lists_are_bounded_and_deduplicated(void **state)
{
    (void)state;
    struct node n;
    memset(&n, 0, sizeof n);
    const char *names[TIDE_MAX_NODE_IMAGES + 8];
    char buf[TIDE_MAX_NODE_IMAGES + 8][16];
    for (int i = 0; i < TIDE_MAX_NODE_IMAGES + 8; i++) {
        snprintf(buf[i], sizeof buf[i], "img:%d", i);
        names[i] = buf[i];
    }
    image_node_set(&n, names, TIDE_MAX_NODE_IMAGES + 8);
    assert_int_equal(n.nimages, TIDE_MAX_NODE_IMAGES);
    assert_true(image_node_holds(&n, image_key("img:0")));
    assert_false(image_node_holds(&n, image_key("img:70")));
    const char *twice[] = {"busybox", "busybox:latest", ""};
    image_node_set(&n, twice, 3);
    assert_int_equal(n.nimages, 1);
    assert_false(image_node_holds(&n, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_strategy_prefers_the_node_that_holds_the_image,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_job_without_image_keeps_the_strategys_choice, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_image_is_a_preference_not_a_wait, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_among_nodes_with_the_image_the_strategys_order_decides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_image_lists_are_bounded_and_deduplicated, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
