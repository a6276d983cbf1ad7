/* Simulator configuration: defaults, the JSON/YAML form and checks. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/order.h"
#include "core/placement.h"
#include "core/pool_spec.h"
#include "core/sched.h"
#include "sim/sim.h"

void sim_config_defaults(struct sim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->name, sizeof cfg->name, "default");
    snprintf(cfg->policy, sizeof cfg->policy, "fifo");
    snprintf(cfg->placement, sizeof cfg->placement, "loadaware");
    cfg->preempt_interval_ms = 60000;
    cfg->autoscale_interval_ms = 1000;
    cfg->oracle_runtime = true;
    cfg->seed = 1;
    budget_set_init(&cfg->budgets);
    cfg->npools = 1;
    struct sim_pool *p = &cfg->pools[0];
    snprintf(p->name, sizeof p->name, "default");
    p->nodes = 8;
    p->gpus_per_node = 8;
    snprintf(p->gpu_model, sizeof p->gpu_model, "V100");
    p->gpu_memory_mib = 32768;
    p->price_per_gpu_hour_micros = 2480000;
    pool_defaults(&p->core);
}

void sim_config_server_scheduler(struct sim_config *cfg)
{
    struct sched_config server;
    sched_config_defaults(&server);
    snprintf(cfg->policy, sizeof cfg->policy, "%s", server.order->name);
    snprintf(cfg->placement, sizeof cfg->placement, "%s", server.placement->name);
    cfg->backfill = server.backfill;
}

bool sim_config_elastic(const struct sim_config *cfg)
{
    for (int i = 0; i < cfg->npools; i++)
        if (cfg->pools[i].elastic)
            return true;
    return false;
}

void sim_pool_core(const struct sim_config *cfg, int i, struct pool *out)
{
    const struct sim_pool *sp = &cfg->pools[i];
    if (sp->elastic)
        *out = sp->core;
    else {
        pool_defaults(out);
        out->min_nodes = out->max_nodes = sp->nodes;
        out->boot_time_s = 0;
        out->billing = BILLING_ON_DEMAND;
    }
    snprintf(out->name, sizeof out->name, "%s", sp->name);
    snprintf(out->gpu_model, sizeof out->gpu_model, "%s", sp->gpu_model);
    snprintf(out->driver, sizeof out->driver, "sim");
    out->gpus_per_node = sp->gpus_per_node;
    out->gpu_memory_mib = sp->gpu_memory_mib;
    if (!sp->elastic || !sp->price_per_node_hour_set)
        out->price_per_node_hour_micros = sp->price_per_gpu_hour_micros * sp->gpus_per_node;
}

int sim_parse_price_micros(const char *s, int64_t *out)
{
    return pool_parse_money_micros(s, out);
}

/* A price may be written as a number (2.48) or a string ("2.48"). Reals
 * are printed back with the fewest digits that read back the same, so 2.48
 * stays exactly 2480000 millionths. */
static int price_from_json(const json_t *v, int64_t *out)
{
    char buf[64];
    if (json_is_string(v))
        snprintf(buf, sizeof buf, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) {
        /* The fewest decimals (at most 6) that read back as d: 300.0 is
         * "300", 2.48 is "2.48"; finer than a millionth is refused. */
        double d = json_real_value(v);
        int decimals = 0;
        for (; decimals <= 6; decimals++) {
            double back;
            if (snprintf(buf, sizeof buf, "%.*f", decimals, d) < (int)sizeof buf &&
                sscanf(buf, "%lf", &back) == 1 && back == d)
                break;
        }
        if (decimals > 6)
            return -1;
    } else
        return -1;
    return sim_parse_price_micros(buf, out);
}

static int get_int(const json_t *v, const char *field, long long min, long long max,
                   long long *out, struct tide_err *err)
{
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return tide_err_set(err, TIDE_EINVAL, field, "%s must be a whole number from %lld to %lld",
                            field, min, max);
    *out = json_integer_value(v);
    return 0;
}

static int get_str(const json_t *v, const char *field, char *out, size_t size,
                   struct tide_err *err)
{
    if (!json_is_string(v) || strlen(json_string_value(v)) >= size)
        return tide_err_set(err, TIDE_EINVAL, field, "%s must be a string of at most %zu bytes",
                            field, size - 1);
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

static int get_bool(const json_t *v, const char *field, bool *out, struct tide_err *err)
{
    if (!json_is_boolean(v))
        return tide_err_set(err, TIDE_EINVAL, field, "%s must be true or false", field);
    *out = json_is_true(v);
    return 0;
}

static int get_real(const json_t *v, const char *field, double lo, double hi, bool hi_open,
                    double *out, struct tide_err *err)
{
    double d = json_is_number(v) ? json_number_value(v) : -1;
    if (!json_is_number(v) || !(d >= lo) || (hi_open ? !(d < hi) : !(d <= hi)))
        return tide_err_set(err, TIDE_EINVAL, field, "%s must be a number from %g to %g%s", field,
                            lo, hi, hi_open ? " (not included)" : "");
    *out = d;
    return 0;
}

/* interruptions: [{node_index: 0, at_s: 600}, ...] */
static int interruptions_from_json(struct sim_pool *p, const json_t *v, const char *field,
                                   struct tide_err *err)
{
    if (!json_is_array(v) || json_array_size(v) > SIM_MAX_LISTED)
        return tide_err_set(err, TIDE_EINVAL, field,
                            "%s must be a list of at most %d {node_index, at_s}", field,
                            SIM_MAX_LISTED);
    p->ninterruptions = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e)
    {
        char f[128];
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        const json_t *node = json_object_get(e, "node_index"), *at = json_object_get(e, "at_s");
        if (!json_is_object(e) || !node || !at || json_object_size(e) != 2)
            return tide_err_set(err, TIDE_EINVAL, f, "%s must be {node_index: N, at_s: S}", f);
        long long n = 0, s = 0;
        char fn[144], fa[144];
        snprintf(fn, sizeof fn, "%s.node_index", f);
        snprintf(fa, sizeof fa, "%s.at_s", f);
        int rc = get_int(node, fn, 0, 1000000, &n, err);
        if (!rc)
            rc = get_int(at, fa, 0, 100LL * 365 * 86400, &s, err);
        if (rc)
            return rc;
        p->interruptions[p->ninterruptions++] = (struct sim_interruption){(int)n, s * 1000};
    }
    return 0;
}

/* The text a YAML scalar had, for pool_spec (which reads tide.yaml's
 * scalars as text): NULL for lists, mappings and null. */
static const char *scalar_text(const json_t *v, char *buf, size_t size)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_true(v) || json_is_false(v))
        return json_is_true(v) ? "true" : "false";
    if (json_is_integer(v)) {
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    if (json_is_real(v)) {
        /* The fewest decimals (at least one, as YAML had a real) that read
         * back as the number: 4.20 is "4.2", and 8.0 stays "8.0", which an
         * integer key refuses as the server does. */
        double d = json_real_value(v), back;
        for (int decimals = 1; decimals <= 9; decimals++)
            if (snprintf(buf, size, "%.*f", decimals, d) < (int)size &&
                sscanf(buf, "%lf", &back) == 1 && back == d)
                return buf;
        snprintf(buf, size, "%.17g", d);
        return buf;
    }
    return NULL;
}

/* What the simulated cloud does (pool_spec_sim_only): tide sim's own keys. */
static int cloud_key(struct sim_pool *p, const char *key, const json_t *v, const char *field,
                     struct tide_err *err)
{
    if (!strcmp(key, "interruptions_per_node_hour"))
        return get_real(v, field, 0, 1000, false, &p->interruptions_per_node_hour, err);
    if (!strcmp(key, "interruptions"))
        return interruptions_from_json(p, v, field, err);
    if (!strcmp(key, "provider_failure_rate"))
        return get_real(v, field, 0, 1, true, &p->provider_failure_rate, err);
    /* provider_failed_calls */
    if (!json_is_array(v) || json_array_size(v) > SIM_MAX_LISTED)
        return tide_err_set(err, TIDE_EINVAL, field,
                            "%s must be a list of at most %d create call numbers (1 = the first)",
                            field, SIM_MAX_LISTED);
    p->nfailing_calls = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e)
    {
        long long n = 0;
        int rc = get_int(e, field, 1, 1000000000, &n, err);
        if (rc)
            return rc;
        p->failing_calls[p->nfailing_calls++] = (int)n;
    }
    return 0;
}

/* schedule: [{days, from, to, min_nodes}] and steps: [{queue_length,
 * wait_s, add}], read by pool_spec as the server reads them. */
static int pool_list_from_json(struct pool *c, const json_t *v, const char *field, bool windows,
                               struct tide_err *err)
{
    int max = windows ? POOL_MAX_WINDOWS : POOL_MAX_STEPS;
    if (!json_is_array(v) || json_array_size(v) > (size_t)max)
        return tide_err_set(err, TIDE_EINVAL, field, "%s must be a list of at most %d mappings",
                            field, max);
    size_t i;
    const json_t *item;
    json_array_foreach(v, i, item)
    {
        char where[160], f[200], why[200], buf[64];
        snprintf(where, sizeof where, "%s[%zu]", field, i);
        if (!json_is_object(item))
            return tide_err_set(err, TIDE_EINVAL, where, "%s must be a mapping", where);
        struct pool_window *w = &c->windows[i];
        struct pool_step *st = &c->steps[i];
        memset(w, 0, sizeof *w);
        memset(st, 0, sizeof *st);
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)item, key, val)
        {
            const char *text = scalar_text(val, buf, sizeof buf);
            snprintf(f, sizeof f, "%s.%s", where, key);
            if (windows ? pool_spec_window_set(w, key, text, why, sizeof why)
                        : pool_spec_step_set(st, key, text, why, sizeof why))
                return tide_err_set(err, TIDE_EINVAL, f, "%s: %s", f, why);
        }
        if (windows ? pool_spec_window_check(w, why, sizeof why)
                    : pool_spec_step_check(st, why, sizeof why))
            return tide_err_set(err, TIDE_EINVAL, where, "%s: %s", where, why);
        if (windows)
            c->nwindows = (int)i + 1;
        else
            c->nsteps = (int)i + 1;
    }
    return 0;
}

/* One entry of pools:, in tide.yaml's form (core/pool_spec.c reads the
 * keys the server reads), plus the simulator's own: cpus and memory per
 * node, and what the simulated cloud does. */
static int pool_from_json(struct sim_pool *p, const json_t *obj, int i, struct tide_err *err)
{
    char field[96], why[200], buf[64];
    const char *first_cloud = NULL;
    if (!json_is_object(obj))
        return tide_err_set(err, TIDE_EINVAL, "pools", "pools[%d] must be a mapping", i);
    struct pool_spec spec;
    pool_spec_init(&spec);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        long long n = 0;
        int rc = 0;
        snprintf(field, sizeof field, "pools[%d].%s", i, key);
        if (!strcmp(key, "cpus")) {
            if (!(rc = get_int(v, field, 0, 1 << 20, &n, err)))
                p->cpus = (int)n;
        } else if (!strcmp(key, "memory")) {
            if (!(rc = get_int(v, field, 0, 1LL << 40, &n, err)))
                p->memory_mib = n;
        } else if (pool_spec_sim_only(key)) {
            if (!first_cloud)
                first_cloud = key;
            rc = cloud_key(p, key, v, field, err);
        } else if (!strcmp(key, "schedule") || !strcmp(key, "steps")) {
            if (!spec.first_elastic)
                spec.first_elastic = key[1] == 'c' ? "schedule" : "steps";
            rc = pool_list_from_json(&spec.pool, v, field, key[1] == 'c', err);
        } else if (!strcmp(key, "images")) {
            /* nothing is pulled in a simulation; pull_time_s is what it costs */
            if (!json_is_array(v))
                rc = tide_err_set(err, TIDE_EINVAL, field, "%s: must be a list of image references",
                                  field);
            size_t k;
            json_t *img;
            json_array_foreach(v, k, img)
            {
                if (rc)
                    break;
                if (pool_spec_image_add(&spec, json_string_value(img), why, sizeof why))
                    rc = tide_err_set(err, TIDE_EINVAL, field, "%s[%zu]: %s", field, k, why);
            }
        } else if (!strcmp(key, "gpu_model") || !strcmp(key, "gpu_memory")) {
            rc = tide_err_set(err, TIDE_EINVAL, field, "%s: is spelled %s, as in tide.yaml",
                              field, key[4] == 'm' ? "gpu" : "gpu_memory_mib");
        } else {
            int r = pool_spec_set(&spec, key, scalar_text(v, buf, sizeof buf), why, sizeof why);
            if (r == POOL_SPEC_UNKNOWN)
                rc = tide_err_set(err, TIDE_EINVAL, field,
                                  "%s: unknown key (known: %s; tide sim also reads cpus, memory, "
                                  "interruptions_per_node_hour, interruptions, "
                                  "provider_failure_rate, provider_failed_calls)",
                                  field, pool_spec_keys);
            else if (r)
                rc = tide_err_set(err, TIDE_EINVAL, field, "%s: %s", field, why);
        }
        if (rc)
            return rc;
    }
    const char *bad = NULL;
    if (pool_spec_finish(&spec, &bad, why, sizeof why)) {
        snprintf(field, sizeof field, "pools[%d].%s", i, bad);
        return tide_err_set(err, TIDE_EINVAL, field, "%s: %s", field, why);
    }
    snprintf(field, sizeof field, "pools[%d]", i);
    p->elastic = spec.nodes < 0;
    if (!p->elastic && (spec.first_elastic || first_cloud))
        return tide_err_set(err, TIDE_EINVAL, field,
                            "%s.%s is for elastic pools (min_nodes, max_nodes); nodes: makes a "
                            "fixed-size one, always ready and on demand",
                            field, spec.first_elastic ? spec.first_elastic : first_cloud);
    const struct pool *c = &spec.pool;
    snprintf(p->name, sizeof p->name, "%s", c->name);
    snprintf(p->gpu_model, sizeof p->gpu_model, "%s", c->gpu_model);
    p->gpus_per_node = c->gpus_per_node;
    p->gpu_memory_mib = c->gpu_memory_mib;
    p->nodes = p->elastic ? 0 : spec.nodes;
    p->price_per_gpu_hour_micros =
        spec.price_per_gpu_hour_micros >= 0 ? spec.price_per_gpu_hour_micros : 0;
    p->price_per_node_hour_set = spec.price_per_node_hour_set;
    p->core = *c;
    return 0;
}

/* projects: [{name, budget_daily, budget_monthly, alert_pct, hard_cap}],
 * the budget keys of tide.yaml's projects: (server/config_projects.c). */
static int projects_from_json(struct sim_config *cfg, const json_t *v, struct tide_err *err)
{
    if (!json_is_array(v) || json_array_size(v) > TIDE_MAX_BUDGETS)
        return tide_err_set(err, TIDE_EINVAL, "projects",
                            "projects must be a list of at most %d projects with budgets",
                            TIDE_MAX_BUDGETS);
    budget_set_init(&cfg->budgets);
    size_t i;
    const json_t *item;
    json_array_foreach(v, i, item)
    {
        char where[64], field[128];
        snprintf(where, sizeof where, "projects[%zu]", i);
        if (!json_is_object(item))
            return tide_err_set(err, TIDE_EINVAL, where, "%s must be a mapping", where);
        struct budget b;
        memset(&b, 0, sizeof b);
        static const int default_alerts[] = {50, 80, 100};
        memcpy(b.alert_pct, default_alerts, sizeof default_alerts);
        b.nalerts = 3;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)item, key, val)
        {
            int rc = 0;
            snprintf(field, sizeof field, "%s.%s", where, key);
            if (!strcmp(key, "name")) {
                rc = get_str(val, field, b.project, sizeof b.project, err);
                if (!rc && !b.project[0])
                    rc = tide_err_set(err, TIDE_EINVAL, field, "%s must not be empty", field);
            } else if (!strcmp(key, "budget_daily") || !strcmp(key, "budget_monthly")) {
                if (price_from_json(
                        val, &b.cap_micros[key[7] == 'd' ? BUDGET_DAILY : BUDGET_MONTHLY]) != 0)
                    rc = tide_err_set(
                        err, TIDE_EINVAL, field,
                        "%s must be an amount >= 0 with at most 6 decimals, like 120.00", field);
            } else if (!strcmp(key, "alert_pct")) {
                if (!json_is_array(val) || json_array_size(val) > BUDGET_MAX_ALERTS)
                    return tide_err_set(err, TIDE_EINVAL, field,
                                        "%s must be a list of at most %d rising percentages like "
                                        "[50, 80, 100]",
                                        field, BUDGET_MAX_ALERTS);
                b.nalerts = 0;
                size_t k;
                const json_t *a;
                json_array_foreach(val, k, a)
                {
                    long long n = 0;
                    if ((rc = get_int(a, field, 1, 1000, &n, err)))
                        return rc;
                    if (b.nalerts && n <= b.alert_pct[b.nalerts - 1])
                        return tide_err_set(err, TIDE_EINVAL, field, "%s: thresholds must rise",
                                            field);
                    b.alert_pct[b.nalerts++] = (int)n;
                }
            } else if (!strcmp(key, "hard_cap")) {
                rc = get_bool(val, field, &b.hard_cap, err);
            } else if (!strcmp(key, "user")) {
                rc = 0; /* the user a project's jobs run as: the simulator runs none */
            } else if (!strcmp(key, "quota_gpus") || !strcmp(key, "weight") ||
                       !strcmp(key, "alert_hook")) {
                rc = tide_err_set(err, TIDE_EINVAL, field,
                                  "%s: the simulator runs no %s; its projects: take budget keys "
                                  "only (name, budget_daily, budget_monthly, alert_pct, hard_cap)",
                                  field, key[0] == 'a' ? "alert hooks" : "fair share");
            } else {
                rc = tide_err_set(err, TIDE_EINVAL, field,
                                  "unknown key %s (allowed: name, budget_daily, budget_monthly, "
                                  "alert_pct, hard_cap)",
                                  field);
            }
            if (rc)
                return rc;
        }
        if (!b.project[0])
            return tide_err_set(err, TIDE_EINVAL, where, "%s needs a name", where);
        if (b.cap_micros[BUDGET_DAILY] <= 0 && b.cap_micros[BUDGET_MONTHLY] <= 0)
            return tide_err_set(err, TIDE_EINVAL, where,
                                "%s (%s) needs budget_daily or budget_monthly above 0", where,
                                b.project);
        if (!budget_add(&cfg->budgets, &b))
            return tide_err_set(err, TIDE_EINVAL, where, "project %s is listed twice", b.project);
    }
    return 0;
}

/* sim: the run's own settings, which the server skips. */
static int sim_section(struct sim_config *cfg, const json_t *sec, struct tide_err *err)
{
    if (!json_is_object(sec))
        return tide_err_set(err, TIDE_EINVAL, "sim", "sim must be a mapping");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)sec, key, v)
    {
        char field[96];
        long long n = 0;
        int rc = 0;
        snprintf(field, sizeof field, "sim.%s", key);
        if (!strcmp(key, "name"))
            rc = get_str(v, field, cfg->name, sizeof cfg->name, err);
        else if (!strcmp(key, "preempt"))
            rc = get_bool(v, field, &cfg->preempt, err);
        else if (!strcmp(key, "oracle_runtime"))
            rc = get_bool(v, field, &cfg->oracle_runtime, err);
        else if (!strcmp(key, "eta"))
            rc = get_bool(v, field, &cfg->eta, err);
        else if (!strcmp(key, "preempt_interval")) {
            if (!(rc = get_int(v, field, 1, 86400 * 365, &n, err)))
                cfg->preempt_interval_ms = n * 1000;
        } else if (!strcmp(key, "preempt_overhead")) {
            if (!(rc = get_int(v, field, 0, 86400 * 365, &n, err)))
                cfg->preempt_overhead_ms = n * 1000;
        } else if (!strcmp(key, "autoscale_interval")) {
            if (!(rc = get_int(v, field, 1, 86400, &n, err)))
                cfg->autoscale_interval_ms = n * 1000;
        } else if (!strcmp(key, "seed")) {
            if (!(rc = get_int(v, field, 0, INT64_MAX, &n, err)))
                cfg->seed = (uint64_t)n;
        } else
            rc = tide_err_set(err, TIDE_EINVAL, field,
                              "%s: unknown key (known: name, preempt, preempt_interval, "
                              "preempt_overhead, oracle_runtime, eta, autoscale_interval, seed)",
                              field);
        if (rc)
            return rc;
    }
    return 0;
}

/* scheduler: as in tide.yaml. The simulator runs policy, placement and
 * backfill; the server's other scheduler keys are known but not simulated
 * (its preemption by priority, retries, fair share, telemetry limits).
 * They are still checked with the server's bounds (server/config.c), so a
 * file the simulator takes the server takes too. */
static int scheduler_section(struct sim_config *cfg, const json_t *sec, struct tide_err *err)
{
    static const struct {
        const char *key;
        long long lo, hi; /* lo > hi: true or false */
    } not_simulated[] = {
        {"preemption", 1, 0},
        {"queue_round_robin", 1, 0},
        {"retry_backoff_s", 0, 86400},
        {"retry_backoff_max_s", 0, 86400},
        {"fair_share_half_life_s", 1, 365LL * 86400},
        {"max_gpu_memory_used_pct", 0, 100},
        {"max_gpu_utilization_pct", 0, 100},
    };
    if (!json_is_object(sec))
        return tide_err_set(err, TIDE_EINVAL, "scheduler", "scheduler must be a mapping");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)sec, key, v)
    {
        char field[96];
        int rc = 0;
        bool known = false;
        snprintf(field, sizeof field, "scheduler.%s", key);
        if (!strcmp(key, "policy"))
            rc = get_str(v, field, cfg->policy, sizeof cfg->policy, err);
        else if (!strcmp(key, "placement"))
            rc = get_str(v, field, cfg->placement, sizeof cfg->placement, err);
        else if (!strcmp(key, "backfill"))
            rc = get_bool(v, field, &cfg->backfill, err);
        else {
            for (size_t i = 0; !known && i < sizeof not_simulated / sizeof not_simulated[0];
                 i++) {
                if (strcmp(key, not_simulated[i].key))
                    continue;
                known = true;
                bool b;
                long long n = 0;
                rc = not_simulated[i].lo > not_simulated[i].hi
                         ? get_bool(v, field, &b, err)
                         : get_int(v, field, not_simulated[i].lo, not_simulated[i].hi, &n, err);
            }
            if (!known)
                rc = tide_err_set(err, TIDE_EINVAL, field,
                                  "%s: unknown key (known: policy, placement, backfill; not "
                                  "simulated: preemption, queue_round_robin, retry_backoff_s, "
                                  "retry_backoff_max_s, fair_share_half_life_s, "
                                  "max_gpu_memory_used_pct, max_gpu_utilization_pct)",
                                  field);
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* Where the top-level keys of the simulator's older config form went. */
static const char *moved_key(const char *key)
{
    static const char *const to_scheduler[] = {"policy", "placement", "backfill"};
    static const char *const to_sim[] = {"name",           "preempt",          "preempt_interval",
                                         "preempt_overhead", "oracle_runtime", "autoscale_interval",
                                         "seed", "eta"};
    for (size_t i = 0; i < sizeof to_scheduler / sizeof to_scheduler[0]; i++)
        if (!strcmp(key, to_scheduler[i]))
            return "scheduler";
    for (size_t i = 0; i < sizeof to_sim / sizeof to_sim[0]; i++)
        if (!strcmp(key, to_sim[i]))
            return "sim";
    return NULL;
}

int sim_config_from_json(struct sim_config *cfg, const json_t *root, struct tide_err *err)
{
    if (!json_is_object(root))
        return tide_err_set(err, TIDE_EINVAL, "", "a sim config must be a mapping");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v)
    {
        int rc = 0;
        if (!strcmp(key, "sim"))
            rc = sim_section(cfg, v, err);
        else if (!strcmp(key, "scheduler"))
            rc = scheduler_section(cfg, v, err);
        else if (!strcmp(key, "server") || !strcmp(key, "retention")) {
            if (!json_is_object(v))
                rc = tide_err_set(err, TIDE_EINVAL, key, "%s must be a mapping", key);
            /* heartbeats, timeouts and what a real server forgets: nothing to simulate */
        } else if (!strcmp(key, "projects")) {
            rc = projects_from_json(cfg, v, err);
        } else if (!strcmp(key, "pools")) {
            if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SIM_MAX_POOLS)
                return tide_err_set(err, TIDE_EINVAL, "pools",
                                    "pools must be a list of 1 to %d pools", SIM_MAX_POOLS);
            cfg->npools = (int)json_array_size(v);
            for (int i = 0; i < cfg->npools; i++) {
                struct sim_pool *p = &cfg->pools[i];
                memset(p, 0, sizeof *p);
                if ((rc = pool_from_json(p, json_array_get(v, (size_t)i), i, err)))
                    return rc;
            }
        } else if (!strcmp(key, "queues")) {
            rc = tide_err_set(err, TIDE_EINVAL, key,
                              "queues: not simulated yet (the simulator runs one queue); remove "
                              "the section to try the rest");
        } else if (moved_key(key))
            rc = tide_err_set(err, TIDE_EINVAL, key, "%s: write it as %s.%s (tide.yaml's form)",
                              key, moved_key(key), key);
        else
            rc = tide_err_set(err, TIDE_EINVAL, key,
                              "unknown section '%s' (known: sim, scheduler, server, projects, "
                              "pools)",
                              key);
        if (rc)
            return rc;
    }
    return 0;
}

int sim_config_validate(const struct sim_config *cfg, struct tide_err *err)
{
    if (!order_by_name(cfg->policy))
        return tide_err_set(err, TIDE_EINVAL, "policy", "unknown policy '%s' (known: %s)",
                            cfg->policy, order_names());
    if (!placement_by_name(cfg->placement))
        return tide_err_set(err, TIDE_EINVAL, "placement",
                            "unknown placement '%s' (see tide sim --help)", cfg->placement);
    long nodes = 0;
    for (int i = 0; i < cfg->npools; i++) {
        const struct sim_pool *p = &cfg->pools[i];
        if (p->gpus_per_node < 0 || p->gpus_per_node > 64)
            return tide_err_set(err, TIDE_EINVAL, "gpus_per_node",
                                "pool %s: gpus_per_node must be 0 to 64", p->name);
        for (int j = 0; j < i; j++)
            if (!strcmp(cfg->pools[j].name, p->name))
                return tide_err_set(err, TIDE_EINVAL, "pools", "two pools are called %s", p->name);
        if (p->elastic) {
            const struct pool *c = &p->core;
            if (c->min_nodes > c->max_nodes || c->max_nodes < 1)
                return tide_err_set(err, TIDE_EINVAL, "max_nodes",
                                    "pool %s: max_nodes must be at least 1 and min_nodes", p->name);
            if (c->boot_time_s >= c->boot_timeout_s)
                return tide_err_set(err, TIDE_EINVAL, "boot_time_s",
                                    "pool %s: boot_time_s must be under boot_timeout_s (%llds)",
                                    p->name, (long long)c->boot_timeout_s);
            if (p->gpus_per_node < 1)
                return tide_err_set(err, TIDE_EINVAL, "gpus_per_node",
                                    "pool %s: an elastic pool needs GPUs", p->name);
            if ((p->interruptions_per_node_hour > 0 || p->ninterruptions > 0) &&
                c->billing != BILLING_SPOT)
                return tide_err_set(err, TIDE_EINVAL, "interruptions",
                                    "pool %s: interruptions are for billing: spot pools", p->name);
            nodes += c->max_nodes;
        } else
            nodes += p->nodes;
    }
    if (nodes == 0)
        return tide_err_set(err, TIDE_EINVAL, "pools", "the cluster has no nodes");
    if (nodes > 10000000)
        return tide_err_set(err, TIDE_EINVAL, "pools", "more than 10,000,000 nodes");
    return 0;
}
