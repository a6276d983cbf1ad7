/* The keys of a pools: entry that tide.yaml and tide sim share (src/core/pool_spec.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "common/tide_err.h"
#include "core/pool_spec.h"

static char why[200];

/* Sets each key=value pair of kv (NULL-terminated) and returns the first failure. */
static int set_all(struct pool_spec *s, const char *const *kv)
{
    for (; kv[0]; kv += 2) {
        int rc = pool_spec_set(s, kv[0], kv[1], why, sizeof why);
        if (rc)
            return rc;
    }
    return 0;
}

static void test_a_pool_reads_the_server_spelling_of_every_key(void **state)
{
    (void)state;
    struct pool_spec s;
    pool_spec_init(&s);
    const char *kv[] = {"name", "burst", "gpu", "V100", "gpus_per_node", "2", "gpu_memory_mib",
                        "16384", "min_nodes", "1", "max_nodes", "3", "boot_time_s", "60",
                        "billing", "spot", "price_per_node_hour", "3.60",
                        "spot_price_per_node_hour", "1.2", "predictive", "true", NULL};
    assert_int_equal(set_all(&s, kv), 0);
    const char *key = NULL;
    assert_int_equal(pool_spec_finish(&s, &key, why, sizeof why), 0);
    assert_string_equal(s.pool.name, "burst");
    assert_string_equal(s.pool.gpu_model, "V100");
    assert_int_equal(s.pool.gpus_per_node, 2);
    assert_int_equal(s.pool.gpu_memory_mib, 16384);
    assert_int_equal(s.pool.min_nodes, 1);
    assert_int_equal(s.pool.max_nodes, 3);
    assert_int_equal(s.pool.billing, BILLING_SPOT);
    assert_int_equal(s.pool.price_per_node_hour_micros, 3600000);
    assert_int_equal(s.pool.spot_price_per_node_hour_micros, 1200000);
    assert_true(s.pool.predictive);
    assert_string_equal(s.first_elastic, "min_nodes");
}

static void test_nodes_is_a_fixed_size_and_gpu_price_makes_the_node_price(void **state)
{
    (void)state;
    struct pool_spec s;
    pool_spec_init(&s);
    const char *kv[] = {"name", "k80x2", "nodes", "321", "gpus_per_node", "2",
                        "price_per_gpu_hour", "0.90", NULL};
    assert_int_equal(set_all(&s, kv), 0);
    const char *key = NULL;
    assert_int_equal(pool_spec_finish(&s, &key, why, sizeof why), 0);
    assert_int_equal(s.pool.min_nodes, 321);
    assert_int_equal(s.pool.max_nodes, 321);
    assert_int_equal(s.pool.price_per_node_hour_micros, 1800000);
    assert_null(s.first_elastic);
}

static void test_a_node_price_wins_over_a_gpu_price(void **state)
{
    (void)state;
    struct pool_spec s;
    pool_spec_init(&s);
    const char *kv[] = {"name", "p", "gpus_per_node", "8", "price_per_gpu_hour", "1",
                        "price_per_node_hour", "5.5", NULL};
    assert_int_equal(set_all(&s, kv), 0);
    const char *key = NULL;
    assert_int_equal(pool_spec_finish(&s, &key, why, sizeof why), 0);
    assert_int_equal(s.pool.price_per_node_hour_micros, 5500000);
}

static void test_bad_values_say_why_and_unknown_keys_are_told_apart(void **state)
{
    (void)state;
    struct pool_spec s;
    pool_spec_init(&s);
    assert_int_equal(pool_spec_set(&s, "gpus_per_node", "99", why, sizeof why), TIDE_EINVAL);
    assert_string_equal(why, "must be from 0 to 64, got 99");
    assert_int_equal(pool_spec_set(&s, "max_nodes", "two", why, sizeof why), TIDE_EINVAL);
    assert_string_equal(why, "must be an integer, got 'two'");
    assert_int_equal(pool_spec_set(&s, "price_per_node_hour", "1.0000001", why, sizeof why),
                     TIDE_EINVAL);
    assert_non_null(strstr(why, "at most 6 decimals"));
    assert_int_equal(pool_spec_set(&s, "gpu", "H 200", why, sizeof why), TIDE_EINVAL);
    assert_int_equal(pool_spec_set(&s, "billing", "barter", why, sizeof why), TIDE_EINVAL);
    assert_int_equal(pool_spec_set(&s, "provider", "cloud", why, sizeof why), TIDE_EINVAL);
    assert_int_equal(pool_spec_set(&s, "name", NULL, why, sizeof why), TIDE_EINVAL);
    assert_int_equal(pool_spec_set(&s, "name", "", why, sizeof why), TIDE_EINVAL);
    assert_int_equal(pool_spec_set(&s, "driver", "", why, sizeof why), TIDE_EINVAL);
    /* Empty is the documented default of region and program. */
    assert_int_equal(pool_spec_set(&s, "region", "", why, sizeof why), 0);
    assert_int_equal(pool_spec_set(&s, "program", "", why, sizeof why), 0);
    assert_int_equal(pool_spec_set(&s, "gpu_model", "V100", why, sizeof why), POOL_SPEC_UNKNOWN);
    assert_int_equal(pool_spec_set(&s, "schedule", NULL, why, sizeof why), POOL_SPEC_UNKNOWN);
}

static void test_finish_names_the_key_at_fault(void **state)
{
    (void)state;
    static const struct {
        const char *kv[7];
        const char *key;
    } cases[] = {
        {{"gpu", "V100", NULL}, "name"},
        {{"name", "p", "nodes", "2", "max_nodes", "3", NULL}, "nodes"},
        {{"name", "p", "min_nodes", "5", "max_nodes", "3", NULL}, "min_nodes"},
        {{"name", "p", "boot_time_s", "400", NULL}, "boot_time_s"},
        {{"name", "p", "provider", "exec", NULL}, "program"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pool_spec s;
        pool_spec_init(&s);
        assert_int_equal(set_all(&s, cases[i].kv), 0);
        const char *key = NULL;
        assert_int_equal(pool_spec_finish(&s, &key, why, sizeof why), TIDE_EINVAL);
        assert_string_equal(key, cases[i].key);
    }
}

static void test_schedule_and_step_entries_are_checked(void **state)
{
    (void)state;
    struct pool_window w = {0};
    assert_int_equal(pool_spec_window_set(&w, "days", "mon-fri", why, sizeof why), 0);
    assert_int_equal(w.days, 0x1f);
    assert_int_equal(pool_spec_window_check(&w, why, sizeof why), TIDE_EINVAL); /* to == from */
    assert_int_equal(pool_spec_window_set(&w, "from", "09:00", why, sizeof why), 0);
    assert_int_equal(pool_spec_window_set(&w, "to", "18:30", why, sizeof why), 0);
    assert_int_equal(w.to_min, 18 * 60 + 30);
    assert_int_equal(pool_spec_window_check(&w, why, sizeof why), 0);
    assert_int_equal(pool_spec_window_set(&w, "days", "someday", why, sizeof why), TIDE_EINVAL);
    struct pool_step st = {0};
    assert_int_equal(pool_spec_step_set(&st, "add", "4", why, sizeof why), 0);
    assert_int_equal(pool_spec_step_check(&st, why, sizeof why), TIDE_EINVAL); /* no trigger */
    assert_int_equal(pool_spec_step_set(&st, "queue_length", "20", why, sizeof why), 0);
    assert_int_equal(pool_spec_step_check(&st, why, sizeof why), 0);
    assert_int_equal(pool_spec_step_set(&st, "add", "0", why, sizeof why), TIDE_EINVAL);
}

/* One bad item refuses the whole list: a window that silently lost its
 * other days would not hold nodes on them. */
static void test_days_with_one_unknown_item_are_refused_not_cut_short(void **state)
{
    (void)state;
    static const char *const bad[] = {"mon,Tue", "mon,,tue", "mon,xyz", "mon,", ",mon",
                                      "mon-",    "mon-xyz",  "monday",  "",     "all,mon"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct pool_window w = {0};
        assert_int_equal(pool_spec_window_set(&w, "days", bad[i], why, sizeof why), TIDE_EINVAL);
        assert_non_null(strstr(why, "must be days like mon-fri"));
        assert_int_equal(w.days, 0);
    }
    struct pool_window w = {0};
    assert_int_equal(pool_spec_window_set(&w, "days", "mon,wed-fri", why, sizeof why), 0);
    assert_int_equal(w.days, 0x1d);
    assert_int_equal(pool_spec_window_set(&w, "days", "sat-mon", why, sizeof why), 0);
    assert_int_equal(w.days, 0x61); /* a range may run past Sunday */
    assert_int_equal(pool_spec_window_set(&w, "days", "all", why, sizeof why), 0);
    assert_int_equal(w.days, 0x7f);
}

static void test_a_clock_time_is_exactly_two_digits_a_colon_and_two_digits(void **state)
{
    (void)state;
    static const char *const bad[] = {"-0:30", " 9: 5", "+9:05", "9:05",  "09:5",  "09:00 ",
                                      "0900",  "24:01", "23:60", "25:00", "09:0a", "09::0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct pool_window w = {0};
        assert_int_equal(pool_spec_window_set(&w, "from", bad[i], why, sizeof why), TIDE_EINVAL);
        assert_non_null(strstr(why, "must be a time like 09:00"));
    }
    struct pool_window w = {0};
    assert_int_equal(pool_spec_window_set(&w, "from", "00:00", why, sizeof why), 0);
    assert_int_equal(w.from_min, 0);
    assert_int_equal(pool_spec_window_set(&w, "from", "23:59", why, sizeof why), 0);
    assert_int_equal(w.from_min, 23 * 60 + 59);
    assert_int_equal(pool_spec_window_set(&w, "to", "24:00", why, sizeof why), 0);
    assert_int_equal(w.to_min, 24 * 60); /* the end of a day */
}

static void test_images_and_pull_time_are_part_of_the_boot_estimate(void **state)
{
    (void)state;
    struct pool_spec s;
    pool_spec_init(&s);
    const char *kv[] = {"name", "p", "boot_time_s", "30", "pull_time_s", "45", NULL};
    assert_int_equal(set_all(&s, kv), 0);
    assert_int_equal(pool_spec_image_add(&s, "docker.io/library/python:3.12", why, sizeof why), 0);
    assert_int_equal(pool_spec_image_add(&s, "localhost/tide-test:1", why, sizeof why), 0);
    const char *key = NULL;
    assert_int_equal(pool_spec_finish(&s, &key, why, sizeof why), 0);
    assert_int_equal(s.pool.nimages, 2);
    assert_string_equal(s.pool.images[1], "localhost/tide-test:1");
    assert_int_equal(pool_boot_estimate_s(&s.pool), 75);
    assert_string_equal(s.first_elastic, "boot_time_s");
    /* bad entries say why; a pull that cannot finish before the boot
     * timeout is refused with the key at fault */
    assert_int_equal(pool_spec_image_add(&s, "", why, sizeof why), TIDE_EINVAL);
    assert_int_equal(pool_spec_image_add(&s, "a b", why, sizeof why), TIDE_EINVAL);
    assert_non_null(strstr(why, "spaces"));
    assert_int_equal(pool_spec_image_add(&s, "--privileged", why, sizeof why), TIDE_EINVAL);
    for (int i = 2; i < POOL_MAX_IMAGES; i++)
        assert_int_equal(pool_spec_image_add(&s, "x:1", why, sizeof why), 0);
    assert_int_equal(pool_spec_image_add(&s, "x:2", why, sizeof why), TIDE_EINVAL);
    assert_non_null(strstr(why, "at most"));
    struct pool_spec slow;
    pool_spec_init(&slow);
    const char *kv2[] = {"name", "p", "boot_time_s", "100", "pull_time_s", "250", NULL};
    assert_int_equal(set_all(&slow, kv2), 0);
    assert_int_equal(pool_spec_finish(&slow, &key, why, sizeof why), TIDE_EINVAL);
    assert_string_equal(key, "pull_time_s");
}

static void test_only_the_simulated_clouds_keys_are_sim_only(void **state)
{
    (void)state;
    assert_true(pool_spec_sim_only("interruptions_per_node_hour"));
    assert_true(pool_spec_sim_only("provider_failed_calls"));
    assert_false(pool_spec_sim_only("interruption_grace_s"));
    assert_false(pool_spec_sim_only("cpus"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_pool_reads_the_server_spelling_of_every_key),
        cmocka_unit_test(test_nodes_is_a_fixed_size_and_gpu_price_makes_the_node_price),
        cmocka_unit_test(test_a_node_price_wins_over_a_gpu_price),
        cmocka_unit_test(test_bad_values_say_why_and_unknown_keys_are_told_apart),
        cmocka_unit_test(test_finish_names_the_key_at_fault),
        cmocka_unit_test(test_schedule_and_step_entries_are_checked),
        cmocka_unit_test(test_days_with_one_unknown_item_are_refused_not_cut_short),
        cmocka_unit_test(test_a_clock_time_is_exactly_two_digits_a_colon_and_two_digits),
        cmocka_unit_test(test_images_and_pull_time_are_part_of_the_boot_estimate),
        cmocka_unit_test(test_only_the_simulated_clouds_keys_are_sim_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
