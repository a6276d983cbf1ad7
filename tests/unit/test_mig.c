/* MIG instances in the core: matching by profile, refusal reasons, whole
 * jobs kept off MIG-mode GPUs, and the mig field of job specs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/gpu_share.h"
#include "core/job_spec.h"
#include "core/placement.h"

#include "cluster_fixture.h"

/* One A100 in MIG mode (index 0) with two 3g.40gb instances (1 and 2). */
static struct node mig_node(int64_t id)
{
    struct node n = fx_node(id, 3, "A100", 81920);
    n.gpus[0].mig_mode = true;
    for (int k = 1; k <= 2; k++) {
        snprintf(n.gpus[k].name, sizeof n.gpus[k].name, "A100 MIG 3g.40gb");
        snprintf(n.gpus[k].uuid, sizeof n.gpus[k].uuid, "MIG-%lld-%d", (long long)id, k);
        snprintf(n.gpus[k].mig_profile, sizeof n.gpus[k].mig_profile, "3g.40gb");
        n.gpus[k].mig_parent = 0;
        n.gpus[k].memory_total_mib = 40960;
    }
    return n;
}

static struct job mig_job(int64_t id, const char *profile)
{
    struct job j = fx_job(id, 1);
    snprintf(j.mig, sizeof j.mig, "%s", profile);
    return j;
}

static enum placement_result choose(struct cluster *c, const struct job *job,
                                    struct placement_choice *choice, char *why)
{
    struct placement_config cfg;
    placement_config_defaults(&cfg);
    return fx_choose(&placement_binpack, &cfg, c, job, choice, why);
}

static void test_mig_jobs_take_distinct_matching_instances_and_a_third_waits(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = mig_node(1);
    cluster_put_node(&c, &n);
    struct placement_choice ch;
    char why[TIDE_REASON_MAX] = "";
    struct job a = mig_job(1, "3g.40gb"), b = mig_job(2, "3g.40gb"), third = mig_job(3, "3g.40gb");
    assert_int_equal(choose(&c, &a, &ch, why), PLACEMENT_FOUND);
    assert_int_equal(ch.gpu_index[0], 1);
    cluster_assign(&c, &a, ch.node, ch.gpu_index, 1);
    assert_int_equal(choose(&c, &b, &ch, why), PLACEMENT_FOUND);
    assert_int_equal(ch.gpu_index[0], 2);
    cluster_assign(&c, &b, ch.node, ch.gpu_index, 1);
    assert_int_equal(choose(&c, &third, &ch, why), PLACEMENT_NOT_NOW);
    assert_non_null(strstr(why, "free MIG 3g.40gb"));
    /* one physical GPU, in use through its instances */
    assert_int_equal(cluster_gpus_total(&c), 1);
    assert_int_equal(cluster_gpus_allocated(&c), 1);
    cluster_release(&c);
}

static void test_profile_no_node_has_is_never_with_the_reason(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = mig_node(1);
    cluster_put_node(&c, &n);
    struct placement_choice ch;
    char why[TIDE_REASON_MAX] = "";
    struct job j = mig_job(1, "1g.10gb");
    assert_int_equal(choose(&c, &j, &ch, why), PLACEMENT_NEVER);
    assert_non_null(strstr(why, "MIG 1g.10gb instance"));
    cluster_release(&c);
}

static void test_whole_gpu_jobs_stay_off_mig_gpus_and_instances(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = mig_node(1);
    cluster_put_node(&c, &n);
    struct placement_choice ch;
    char why[TIDE_REASON_MAX] = "";
    struct job whole = fx_job(1, 1);
    assert_int_equal(choose(&c, &whole, &ch, why), PLACEMENT_NEVER);
    struct job share = fx_job(2, 1);
    share.gpu_memory_mib = 1000;
    assert_int_equal(choose(&c, &share, &ch, why), PLACEMENT_NEVER);
    assert_false(gpu_is_free(&c.nodes[0].gpus[0]));
    assert_false(gpu_is_free(&c.nodes[0].gpus[1]));
    cluster_release(&c);
}

static void test_mig_model_glob_matches_the_parent(void **state)
{
    (void)state;
    struct cluster c;
    cluster_init(&c);
    struct node n = mig_node(1);
    snprintf(n.gpus[1].name, sizeof n.gpus[1].name, "MIG 3g.40gb");
    snprintf(n.gpus[2].name, sizeof n.gpus[2].name, "MIG 3g.40gb");
    cluster_put_node(&c, &n);
    struct placement_choice ch;
    char why[TIDE_REASON_MAX] = "";
    struct job j = mig_job(1, "3g.40gb");
    snprintf(j.gpu_model, sizeof j.gpu_model, "A100*");
    assert_int_equal(choose(&c, &j, &ch, why), PLACEMENT_FOUND);
    snprintf(j.gpu_model, sizeof j.gpu_model, "H200*");
    assert_int_equal(choose(&c, &j, &ch, why), PLACEMENT_NEVER);
    cluster_release(&c);
}

static int parse(const char *body, struct job *job, struct tide_err *err)
{
    json_t *spec = NULL;
    int rc = job_spec_parse(body, strlen(body), &spec, job, err);
    json_decref(spec);
    return rc;
}

static void test_job_spec_accepts_a_mig_profile_and_refuses_bad_shapes(void **state)
{
    (void)state;
    struct job job;
    struct tide_err err = {0};
    assert_int_equal(parse("{\"mig\": \"1g.10gb\", \"command\": [\"true\"]}", &job, &err), 0);
    assert_string_equal(job.mig, "1g.10gb");
    assert_int_equal(job.gpus, 1);
    const char *bad[] = {"\"10gb\"", "\"1g.10\"", "\"0g.5gb\"", "\"1g.gb\"", "\"\"", "3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"mig\": %s, \"command\": [\"true\"]}", bad[i]);
        assert_int_equal(parse(body, &job, &err), TIDE_EINVAL);
        assert_string_equal(err.field, "mig");
    }
    assert_int_equal(parse("{\"mig\": \"1g.10gb\", \"gpus\": 2, \"command\": [\"true\"]}", &job, &err),
                     TIDE_EINVAL);
    assert_string_equal(err.field, "mig");
    assert_int_equal(
        parse("{\"mig\": \"1g.10gb\", \"gpu_memory\": 100, \"command\": [\"true\"]}", &job, &err),
        TIDE_EINVAL);
}

int main(void)
{
#define T(f) cmocka_unit_test(f)
    const struct CMUnitTest tests[] = {
        T(test_mig_jobs_take_distinct_matching_instances_and_a_third_waits),
        T(test_profile_no_node_has_is_never_with_the_reason),
        T(test_whole_gpu_jobs_stay_off_mig_gpus_and_instances),
        T(test_mig_model_glob_matches_the_parent),
        T(test_job_spec_accepts_a_mig_profile_and_refuses_bad_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
