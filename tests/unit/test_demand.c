/* The autoscaler's waiting jobs by shape (core/demand.c): shapes, age
 * order, removal, coming back, sweeping, and the walk's next slot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "cluster_fixture.h"
#include "core/demand.h"

static struct job at(int64_t id, int gpus, int64_t submit_ms)
{
    struct job j = fx_job(id, gpus);
    j.submit_ms = submit_ms;
    return j;
}

/* The live ids of shape s from its first slot on, in order. */
static size_t live_ids(const struct demand_shape *s, int64_t *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = demand_next(s, 0, 0, 0); i < s->n && n < cap; i = demand_next(s, i + 1, 0, 0))
        out[n++] = s->slots[i].id;
    return n;
}

static void test_jobs_group_by_shape_each_in_age_order_then_id(void **state)
{
    (void)state;
    struct demand d;
    demand_init(&d);
    struct job a = at(1, 1, 500), b = at(2, 1, 100), c = at(3, 2, 100), e = at(4, 1, 100);
    struct job model = at(5, 1, 0);
    snprintf(model.gpu_model, sizeof model.gpu_model, "A100");
    struct job *all[] = {&a, &b, &c, &e, &model};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(demand_add(&d, all[i]), 0);
    assert_int_equal(d.nshapes, 3); /* 1 GPU, 2 GPUs, 1 GPU of a model */
    assert_int_equal(demand_count(&d), 5);
    int64_t ids[8];
    assert_int_equal(live_ids(&d.shapes[0], ids, 8), 3);
    assert_int_equal(ids[0], 2); /* submitted at 100, id 2 */
    assert_int_equal(ids[1], 4); /* also at 100, id 4 */
    assert_int_equal(ids[2], 1); /* at 500 */
    assert_true(demand_same_shape(&d.shapes[2].key, &model));
    assert_false(demand_same_shape(&d.shapes[0].key, &model));
    demand_release(&d);
}

static void test_a_removed_job_is_skipped_and_one_back_again_is_where_it_was(void **state)
{
    (void)state;
    struct demand d;
    demand_init(&d);
    struct job j[4];
    for (int i = 0; i < 4; i++) {
        j[i] = at(i + 1, 1, (i + 1) * 10);
        assert_int_equal(demand_add(&d, &j[i]), 0);
    }
    demand_remove(&d, &j[0]);
    demand_remove(&d, &j[2]);
    demand_remove(&d, &j[2]); /* twice: no-op */
    int64_t ids[8];
    assert_int_equal(live_ids(&d.shapes[0], ids, 8), 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 4);
    assert_int_equal(demand_add(&d, &j[0]), 0); /* requeued */
    assert_int_equal(live_ids(&d.shapes[0], ids, 8), 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(demand_count(&d), 3);
    demand_release(&d);
}

static void test_next_after_a_job_skips_removed_slots_and_everything_up_to_it(void **state)
{
    (void)state;
    struct demand d;
    demand_init(&d);
    struct job j[6];
    for (int i = 0; i < 6; i++) {
        j[i] = at(i + 1, 1, 100); /* one submit time: by id */
        assert_int_equal(demand_add(&d, &j[i]), 0);
    }
    demand_remove(&d, &j[3]);
    const struct demand_shape *s = &d.shapes[0];
    size_t i = demand_next(s, 0, 100, 3); /* after job 3: 4 is gone, so 5 */
    assert_true(i < s->n);
    assert_int_equal(s->slots[i].id, 5);
    assert_int_equal(demand_next(s, 0, 100, 6), s->n);
    demand_release(&d);
}

static void test_many_removals_at_the_front_are_swept_out(void **state)
{
    (void)state;
    struct demand d;
    demand_init(&d);
    static struct job j[300];
    for (int i = 0; i < 300; i++) {
        j[i] = at(i + 1, 1, i);
        assert_int_equal(demand_add(&d, &j[i]), 0);
    }
    for (int i = 0; i < 250; i++)
        demand_remove(&d, &j[i]); /* FIFO starts: the oldest leave */
    const struct demand_shape *s = &d.shapes[0];
    assert_int_equal(s->live, 50);
    assert_true(s->n < 300); /* swept */
    int64_t ids[64];
    assert_int_equal(live_ids(s, ids, 64), 50);
    assert_int_equal(ids[0], 251);
    assert_int_equal(ids[49], 300);
    demand_release(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs_group_by_shape_each_in_age_order_then_id),
        cmocka_unit_test(test_a_removed_job_is_skipped_and_one_back_again_is_where_it_was),
        cmocka_unit_test(test_next_after_a_job_skips_removed_slots_and_everything_up_to_it),
        cmocka_unit_test(test_many_removals_at_the_front_are_swept_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
