/* Simulator configuration: defaults, the JSON/YAML form and checks. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/order.h"
#include "core/placement.h"
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
    int64_t whole = 0, frac = 0;
    int fdigits = 0, digits = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9') {
        if (whole > 1000000000000LL)
            return -1;
        whole = whole * 10 + (*p++ - '0');
        digits++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (fdigits == 6)
                return -1; /* finer than a millionth: refuse rather than round money */
            frac = frac * 10 + (*p++ - '0');
            fdigits++;
            digits++;
        }
    }
    if (*p || !digits)
        return -1;
    for (; fdigits < 6; fdigits++)
        frac *= 10;
    *out = whole * 1000000 + frac;
    return 0;
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

/* The elastic keys, named and bounded as in tide.yaml's pools: section. */
static const struct {
    const char *key;
    long long lo, hi;
    size_t off; /* in struct pool; int fields marked by is_int */
    bool is_int;
} elastic_ints[] = {
    {"min_nodes", 0, 10000, offsetof(struct pool, min_nodes), true},
    {"max_nodes", 0, 10000, offsetof(struct pool, max_nodes), true},
    {"boot_time_s", 0, 86400, offsetof(struct pool, boot_time_s), false},
    {"boot_timeout_s", 1, 86400, offsetof(struct pool, boot_timeout_s), false},
    {"pack_gpu_hours", 0, 100000000, offsetof(struct pool, pack_gpu_hours), false},
    {"scale_up_delay_s", 0, 86400, offsetof(struct pool, scale_up_delay_s), false},
    {"scale_down_utilization", 0, 100, offsetof(struct pool, scale_down_utilization_pct), true},
    {"scale_down_window_s", 0, 30LL * 86400, offsetof(struct pool, scale_down_window_s), false},
    {"cooldown_s", 0, 86400, offsetof(struct pool, cooldown_s), false},
    {"interruption_grace_s", 0, 3600, offsetof(struct pool, interruption_grace_s), false},
};

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
        long long n, s;
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

/* One elastic key of pools[i] into p->core; 1 when key is not one. */
static int elastic_key(struct sim_pool *p, const char *key, const json_t *v, const char *field,
                       struct tide_err *err)
{
    for (size_t k = 0; k < sizeof elastic_ints / sizeof elastic_ints[0]; k++) {
        if (strcmp(key, elastic_ints[k].key))
            continue;
        long long n;
        int rc = get_int(v, field, elastic_ints[k].lo, elastic_ints[k].hi, &n, err);
        if (rc)
            return rc;
        char *dst = (char *)&p->core + elastic_ints[k].off;
        if (elastic_ints[k].is_int)
            *(int *)dst = (int)n;
        else
            *(int64_t *)dst = n;
        return 0;
    }
    if (!strcmp(key, "price_per_node_hour") || !strcmp(key, "spot_price_per_node_hour")) {
        bool spot = key[0] == 's';
        if (price_from_json(v, spot ? &p->core.spot_price_per_node_hour_micros
                                    : &p->core.price_per_node_hour_micros) != 0)
            return tide_err_set(err, TIDE_EINVAL, field,
                                "%s must be a price >= 0 with at most 6 decimals, like 29.50",
                                field);
        if (!spot)
            p->price_per_node_hour_set = true;
        return 0;
    }
    if (!strcmp(key, "interruptions_per_node_hour"))
        return get_real(v, field, 0, 1000, false, &p->interruptions_per_node_hour, err);
    if (!strcmp(key, "interruptions"))
        return interruptions_from_json(p, v, field, err);
    if (!strcmp(key, "provider_failure_rate"))
        return get_real(v, field, 0, 1, true, &p->provider_failure_rate, err);
    if (!strcmp(key, "provider_failed_calls")) {
        if (!json_is_array(v) || json_array_size(v) > SIM_MAX_LISTED)
            return tide_err_set(
                err, TIDE_EINVAL, field,
                "%s must be a list of at most %d create call numbers (1 = the first)", field,
                SIM_MAX_LISTED);
        p->nfailing_calls = 0;
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e)
        {
            long long n;
            int rc = get_int(e, field, 1, 1000000000, &n, err);
            if (rc)
                return rc;
            p->failing_calls[p->nfailing_calls++] = (int)n;
        }
        return 0;
    }
    if (!strcmp(key, "billing")) {
        int b = json_is_string(v) ? billing_kind_from_name(json_string_value(v)) : -1;
        if (b < 0)
            return tide_err_set(err, TIDE_EINVAL, field,
                                "%s must be on_demand, reserved, spot or pack", field);
        p->core.billing = (enum billing_kind)b;
        return 0;
    }
    return 1;
}

static int pool_from_json(struct sim_pool *p, const json_t *obj, int i, struct tide_err *err)
{
    char field[96];
    bool saw_nodes = false, saw_max = false;
    const char *first_elastic = NULL;
    if (!json_is_object(obj))
        return tide_err_set(err, TIDE_EINVAL, "pools", "pools[%d] must be a mapping", i);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        long long n;
        int rc = 0;
        snprintf(field, sizeof field, "pools[%d].%s", i, key);
        if (!strcmp(key, "name"))
            rc = get_str(v, field, p->name, sizeof p->name, err);
        else if (!strcmp(key, "gpu_model"))
            rc = get_str(v, field, p->gpu_model, sizeof p->gpu_model, err);
        else if (!strcmp(key, "nodes")) {
            saw_nodes = true;
            if (!(rc = get_int(v, field, 0, 1000000, &n, err)))
                p->nodes = (int)n;
        } else if (!strcmp(key, "gpus_per_node")) {
            if (!(rc = get_int(v, field, 0, 64, &n, err)))
                p->gpus_per_node = (int)n;
        } else if (!strcmp(key, "gpu_memory")) {
            if (!(rc = get_int(v, field, 0, 1LL << 40, &n, err)))
                p->gpu_memory_mib = n;
        } else if (!strcmp(key, "cpus")) {
            if (!(rc = get_int(v, field, 0, 1 << 20, &n, err)))
                p->cpus = (int)n;
        } else if (!strcmp(key, "memory")) {
            if (!(rc = get_int(v, field, 0, 1LL << 40, &n, err)))
                p->memory_mib = n;
        } else if (!strcmp(key, "price_per_gpu_hour")) {
            if (price_from_json(v, &p->price_per_gpu_hour_micros) != 0)
                rc = tide_err_set(err, TIDE_EINVAL, field,
                                  "%s must be a price >= 0 with at most 6 decimals, like 2.48",
                                  field);
        } else if ((rc = elastic_key(p, key, v, field, err)) == 1) {
            rc = tide_err_set(err, TIDE_EINVAL, field,
                              "unknown key %s (allowed: name, nodes, gpus_per_node, gpu_model, "
                              "gpu_memory, cpus, memory, price_per_gpu_hour; elastic pools: "
                              "min_nodes, max_nodes, boot_time_s, boot_timeout_s, "
                              "price_per_node_hour, spot_price_per_node_hour, billing, "
                              "pack_gpu_hours, scale_up_delay_s, scale_down_utilization, "
                              "scale_down_window_s, cooldown_s, interruption_grace_s, "
                              "interruptions_per_node_hour, interruptions, "
                              "provider_failure_rate, provider_failed_calls)",
                              field);
        } else if (!rc) {
            saw_max |= !strcmp(key, "max_nodes");
            if (!first_elastic)
                first_elastic = key;
        }
        if (rc)
            return rc;
    }
    snprintf(field, sizeof field, "pools[%d]", i);
    if (first_elastic && !saw_max)
        return tide_err_set(err, TIDE_EINVAL, field,
                            "%s.%s is for elastic pools, which need max_nodes", field,
                            first_elastic);
    if (saw_max && saw_nodes)
        return tide_err_set(err, TIDE_EINVAL, field,
                            "%s: nodes is for fixed-size pools; an elastic pool has min_nodes "
                            "and max_nodes", field);
    p->elastic = saw_max;
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
                    long long n;
                    if ((rc = get_int(a, field, 1, 1000, &n, err)))
                        return rc;
                    if (b.nalerts && n <= b.alert_pct[b.nalerts - 1])
                        return tide_err_set(err, TIDE_EINVAL, field, "%s: thresholds must rise",
                                            field);
                    b.alert_pct[b.nalerts++] = (int)n;
                }
            } else if (!strcmp(key, "hard_cap")) {
                rc = get_bool(val, field, &b.hard_cap, err);
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

int sim_config_from_json(struct sim_config *cfg, const json_t *root, struct tide_err *err)
{
    if (!json_is_object(root))
        return tide_err_set(err, TIDE_EINVAL, "", "a sim config must be a mapping");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v)
    {
        long long n;
        int rc = 0;
        if (!strcmp(key, "name"))
            rc = get_str(v, key, cfg->name, sizeof cfg->name, err);
        else if (!strcmp(key, "policy"))
            rc = get_str(v, key, cfg->policy, sizeof cfg->policy, err);
        else if (!strcmp(key, "placement"))
            rc = get_str(v, key, cfg->placement, sizeof cfg->placement, err);
        else if (!strcmp(key, "backfill"))
            rc = get_bool(v, key, &cfg->backfill, err);
        else if (!strcmp(key, "preempt"))
            rc = get_bool(v, key, &cfg->preempt, err);
        else if (!strcmp(key, "oracle_runtime"))
            rc = get_bool(v, key, &cfg->oracle_runtime, err);
        else if (!strcmp(key, "eta"))
            rc = get_bool(v, key, &cfg->eta, err);
        else if (!strcmp(key, "preempt_interval")) {
            if (!(rc = get_int(v, key, 1, 86400 * 365, &n, err)))
                cfg->preempt_interval_ms = n * 1000;
        } else if (!strcmp(key, "preempt_overhead")) {
            if (!(rc = get_int(v, key, 0, 86400 * 365, &n, err)))
                cfg->preempt_overhead_ms = n * 1000;
        } else if (!strcmp(key, "autoscale_interval")) {
            if (!(rc = get_int(v, key, 1, 86400, &n, err)))
                cfg->autoscale_interval_ms = n * 1000;
        } else if (!strcmp(key, "seed")) {
            if (!(rc = get_int(v, key, 0, INT64_MAX, &n, err)))
                cfg->seed = (uint64_t)n;
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
                pool_defaults(&p->core);
                snprintf(p->name, sizeof p->name, "pool-%d", i);
                p->gpus_per_node = 8;
                if ((rc = pool_from_json(p, json_array_get(v, (size_t)i), i, err)))
                    return rc;
            }
        } else
            rc = tide_err_set(err, TIDE_EINVAL, key,
                              "unknown key '%s' (allowed: name, policy, placement, backfill, "
                              "preempt, preempt_interval, preempt_overhead, oracle_runtime, "
                              "eta, autoscale_interval, seed, projects, pools)",
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
