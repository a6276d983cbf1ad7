/* Shared helpers of the simulator's unit suites: trace jobs, configs from
 * JSON text, and report lookups. Include after cmocka.h. */
#ifndef TIDE_TEST_SIM_FIXTURE_H
#define TIDE_TEST_SIM_FIXTURE_H

#include <jansson.h>
#include <stdio.h>

#include "sim/sim.h"
#include "sim/trace.h"

/* A trace job of project (NULL: "default") in queue "default". */
static inline struct trace_job sim_fx_job(int64_t submit_s, int64_t duration_s, int gpus,
                                          const char *project)
{
    struct trace_job j = {.submit_ms = submit_s * 1000, .duration_ms = duration_s * 1000,
                          .gpus = gpus};
    snprintf(j.project, sizeof j.project, "%s", project ? project : "default");
    snprintf(j.queue, sizeof j.queue, "default");
    return j;
}

/* cfg from the defaults and the JSON text, which must parse and validate. */
static inline void sim_fx_config(struct sim_config *cfg, const char *text)
{
    struct tide_err err = {0};
    sim_config_defaults(cfg);
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    assert_non_null(root);
    int rc = sim_config_from_json(cfg, root, &err);
    if (rc)
        fprintf(stderr, "config: %s\n", err.message);
    assert_int_equal(rc, 0);
    json_decref(root);
    assert_int_equal(sim_config_validate(cfg, &err), 0);
}

/* root[a] or root[a][b], which must exist. */
static inline const json_t *sim_fx_at(const json_t *root, const char *a, const char *b)
{
    const json_t *v = json_object_get(root, a);
    if (b)
        v = json_object_get(v, b);
    assert_non_null(v);
    return v;
}

#endif
