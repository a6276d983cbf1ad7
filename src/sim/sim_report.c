/*
 * The simulator's report: report.json (per-job wait and JCT statistics,
 * by GPU-count bucket, utilisation, fragmentation, preemptions, on-demand
 * cost by pool and project, a down-sampled timeline), the human table and
 * the side-by-side comparison. Only virtual times appear, so the same
 * inputs always give the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define TIMELINE_POINTS 400

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double ms_to_s(int64_t ms)
{
    return (double)ms / 1000.0;
}

/* Nearest-rank percentile of a sorted array. */
static int64_t pct(const int64_t *v, size_t n, int p)
{
    if (n == 0)
        return 0;
    size_t rank = ((size_t)p * n + 99) / 100;
    return v[rank ? rank - 1 : 0];
}

static json_t *stats_json(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
    long double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return json_pack("{s:f, s:f, s:f, s:f, s:f}", "avg", n ? (double)(sum / n) / 1000.0 : 0.0,
                     "p50", ms_to_s(pct(v, n, 50)), "p95", ms_to_s(pct(v, n, 95)), "p99",
                     ms_to_s(pct(v, n, 99)), "max", ms_to_s(n ? v[n - 1] : 0));
}

static const struct {
    const char *name;
    int lo, hi;
} buckets[] = {{"0", 0, 0}, {"1", 1, 1}, {"2-4", 2, 4}, {"5-8", 5, 8}, {"9+", 9, 1 << 30}};

/* interrupted: -1 any job, 0 those no spot interruption requeued, 1 the others. */
static json_t *job_stats_of(const struct sim_result *res, int lo, int hi, int interrupted)
{
    int64_t *jct = malloc((res->njobs + 1) * sizeof *jct);
    int64_t *wait = malloc((res->njobs + 1) * sizeof *wait);
    if (!jct || !wait) {
        free(jct);
        free(wait);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < res->njobs; i++) {
        const struct sim_job_result *j = &res->jobs[i];
        if (j->outcome != SIM_DONE || j->gpus < lo || j->gpus > hi ||
            (interrupted >= 0 && (j->interruptions > 0) != (interrupted > 0)))
            continue;
        jct[n] = j->finish_ms - j->submit_ms;
        wait[n] = j->first_start_ms - j->submit_ms;
        n++;
    }
    json_t *o = json_pack("{s:I, s:o, s:o}", "jobs", (json_int_t)n, "jct_s", stats_json(jct, n),
                          "wait_s", stats_json(wait, n));
    free(jct);
    free(wait);
    return o;
}

static json_t *job_stats(const struct sim_result *res, int lo, int hi)
{
    return job_stats_of(res, lo, hi, -1);
}

/* Time-weighted means of the samples over fixed buckets of virtual time. */
static json_t *timeline_json(const struct sim_config *cfg, const struct sim_result *res)
{
    int64_t end = res->makespan_ms > 0 ? res->makespan_ms : 1;
    /* Rounded up, without adding to end (which may be near SIM_TIME_MAX). */
    int64_t w = end / TIMELINE_POINTS + (end % TIMELINE_POINTS != 0);
    size_t nb = (size_t)(end / w + (end % w != 0));
    double *q = calloc(nb, sizeof *q), *u = calloc(nb, sizeof *u), *fp = calloc(nb, sizeof *fp);
    double *pv = calloc(nb, sizeof *pv);
    if (!q || !u || !fp || !pv) {
        free(q), free(u), free(fp), free(pv);
        return NULL;
    }
    for (size_t i = 0; i < res->nsamples; i++) {
        const struct sim_sample *s = &res->samples[i];
        int64_t a = s->t_ms, b = i + 1 < res->nsamples ? res->samples[i + 1].t_ms : end;
        /* Samples lie in [0, end]; one outside (a time that wrapped round)
         * must not index outside the buckets. */
        if (a < 0)
            a = 0;
        if (b > end)
            b = end;
        while (a < b) {
            size_t k = (size_t)(a / w); /* < nb, as a < end */
            int64_t from = (int64_t)k * w;
            int64_t stop = b - from > w ? from + w : b;
            double d = (double)(stop - a);
            q[k] += s->queued * d;
            u[k] += s->gpus_used * d;
            fp[k] += s->free_partial * d;
            pv[k] += s->gpus_provisioned * d;
            a = stop;
        }
    }
    int64_t price_gpu_ms_total = 0; /* sum over pools of gpus x price: cost per hour, millionths */
    for (int p = 0; p < cfg->npools; p++)
        price_gpu_ms_total += (int64_t)res->gpus_provisioned_by_pool[p] * cfg->pools[p].price_per_gpu_hour_micros;
    json_t *t_s = json_array(), *qa = json_array(), *ua = json_array(), *pa = json_array(),
           *fa = json_array(), *ca = json_array();
    size_t si = 0; /* elastic: the last sample at or before a bucket's end */
    for (size_t k = 0; k < nb; k++) {
        int64_t a = (int64_t)k * w, b = end - a > w ? a + w : end;
        double d = (double)(b - a);
        double prov = res->elastic ? pv[k] / d : (double)res->gpus_provisioned;
        double free_gpus = prov - u[k] / d;
        json_array_append_new(t_s, json_real(ms_to_s(a)));
        json_array_append_new(qa, json_real(q[k] / d));
        json_array_append_new(ua, json_real(u[k] / d));
        json_array_append_new(fa, json_real(free_gpus > 0 ? fp[k] / d / free_gpus : 0.0));
        if (!res->elastic) {
            json_array_append_new(pa, json_integer(res->gpus_provisioned));
            json_array_append_new(ca, json_integer((json_int_t)((__int128)price_gpu_ms_total * b / 3600000)));
            continue;
        }
        while (si + 1 < res->nsamples && res->samples[si + 1].t_ms <= b)
            si++;
        json_array_append_new(pa, json_real(prov));
        json_array_append_new(ca, json_integer(res->nsamples ? res->samples[si].cost_micros : 0));
    }
    free(q), free(u), free(fp), free(pv);
    return json_pack("{s:f, s:o, s:o, s:o, s:o, s:o, s:o}", "bucket_s", ms_to_s(w), "t_s", t_s,
                     "queued", qa, "gpus_used", ua, "gpus_provisioned", pa,
                     "fragmentation", fa, "cost_cum_micros", ca);
}

/* Elastic runs: cost from the core's billing (by pool, billing kind and
 * project), and what the autoscaler did. */
static json_t *elastic_cost_json(const struct sim_result *res, int64_t *allocated_out)
{
    const struct sim_elastic *el = res->elastic;
    const struct billing *b = &el->billing;
    int64_t total = 0, idle = 0, by_kind[4] = {0};
    json_t *by_pool = json_array();
    for (int p = 0; p < el->npools; p++) {
        const struct pool *pool = &el->pools[p];
        int64_t c = billing_pool_cost_micros(b, el->pools, p);
        int64_t i = billing_pool_idle_cost_micros(b, el->pools, p);
        total += c;
        idle += i;
        if ((unsigned)pool->billing < 4)
            by_kind[pool->billing] += c;
        json_array_append_new(
            by_pool,
            json_pack("{s:s, s:s, s:f, s:f, s:f, s:I, s:I, s:I}", "pool", pool->name, "billing",
                      billing_kind_name(pool->billing), "node_hours",
                      (double)b->pools[p].node_ms / 3600000.0, "gpu_hours_provisioned",
                      (double)el->gpu_ms_provisioned_by_pool[p] / 3600000.0, "gpu_hours_allocated",
                      (double)b->pools[p].gpu_ms / 3600000.0, "cost_micros", (json_int_t)c,
                      "allocated_micros", (json_int_t)(c - i), "idle_micros", (json_int_t)i));
    }
    json_t *kinds = json_object();
    for (int k = 0; k < 4; k++)
        json_object_set_new(kinds, billing_kind_name((enum billing_kind)k), json_integer(by_kind[k]));
    json_t *by_project = json_array();
    for (size_t i = 0; i < res->nprojects; i++) {
        const struct sim_project *pr = &res->projects[i];
        int64_t gpu_ms = 0, c = 0;
        for (size_t u = 0; u < b->nusage; u++)
            if (!strcmp(b->usage[u].project, pr->name)) {
                gpu_ms += b->usage[u].gpu_ms;
                c += billing_usage_cost_micros(b, el->pools, &b->usage[u]);
            }
        json_array_append_new(by_project, json_pack("{s:s, s:I, s:f, s:I}", "project", pr->name,
                                                    "jobs", (json_int_t)pr->jobs, "gpu_hours",
                                                    (double)gpu_ms / 3600000.0, "cost_micros",
                                                    (json_int_t)c));
    }
    *allocated_out = total - idle;
    return json_pack(
        "{s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:o}", "billing", "core", "note",
        "metered by the core's billing (src/core/billing.c) from 0 to the last finish: "
        "per node by billing kind, attributed to projects by GPU-time, the rest idle",
        "total_micros", (json_int_t)total, "allocated_micros", (json_int_t)(total - idle),
        "idle_micros", (json_int_t)idle, "by_kind", kinds, "by_pool", by_pool, "by_project",
        by_project);
}

static const char *scale_type_name(int type)
{
    return type == SIM_SCALE_READY           ? "ready"
           : type == SIM_SCALE_CREATE_FAILED ? "create_failed"
           : type == SIM_SCALE_INTERRUPTED   ? "interrupted"
                                             : pool_action_type_name((enum pool_action_type)type);
}

/* Spot interruptions and provider failures: counts, and what they did to
 * JCT (the interrupted jobs against the others, and the delay each
 * interruption added to its job) and cost (GPU-time held through the
 * grace without progress, at the pool's price per GPU-hour). */
static json_t *cloud_json(const struct sim_result *res)
{
    const struct sim_elastic *el = res->elastic;
    long interruptions = 0, missed = 0, asked = 0, requeued = 0, calls = 0, failures = 0;
    int64_t grace_gpu_ms = 0, grace_cost = 0, backoff_ms = 0;
    for (int p = 0; p < el->npools; p++) {
        const struct sim_pool_stats *s = &el->stats[p];
        interruptions += s->interruptions;
        missed += s->interruptions_missed;
        asked += s->jobs_interrupted;
        requeued += s->jobs_requeued;
        grace_gpu_ms += s->grace_gpu_ms;
        grace_cost += billing_cost_micros(s->grace_gpu_ms, pool_price_per_gpu_hour_micros(&el->pools[p]));
        calls += s->create_calls;
        failures += s->provider_failures;
        backoff_ms += s->backoff_ms;
    }
    json_t *hit = job_stats_of(res, 0, 1 << 30, 1), *rest = job_stats_of(res, 0, 1 << 30, 0);
    json_t *intr = json_pack(
        "{s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:o, s:o}", "interruptions", (json_int_t)interruptions,
        "listed_missed", (json_int_t)missed, "jobs_asked_to_checkpoint", (json_int_t)asked,
        "jobs_requeued", (json_int_t)requeued, "delay_job_s", ms_to_s(el->interruption_delay_ms),
        "grace_gpu_hours", (double)grace_gpu_ms / 3600000.0, "grace_cost_micros",
        (json_int_t)grace_cost, "interrupted_jobs", hit, "other_jobs", rest);
    json_t *prov =
        json_pack("{s:I, s:I, s:f}", "create_calls", (json_int_t)calls, "create_failures",
                  (json_int_t)failures, "backoff_s", ms_to_s(backoff_ms));
    return json_pack("{s:o, s:o}", "interruptions", intr, "provider", prov);
}

static json_t *elastic_json(const struct sim_result *res)
{
    const struct sim_elastic *el = res->elastic;
    json_t *pools = json_array();
    for (int p = 0; p < el->npools; p++) {
        const struct sim_pool_stats *s = &el->stats[p];
        json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:f}", "pool",
                              el->pools[p].name, "created", (json_int_t)s->created, "ready",
                              (json_int_t)s->ready, "drained", (json_int_t)s->drained, "undrained",
                              (json_int_t)s->undrained, "released", (json_int_t)s->released,
                              "failed", (json_int_t)s->failed, "peak_nodes", s->peak_nodes,
                              "node_hours", (double)el->billing.pools[p].node_ms / 3600000.0);
        json_object_update_new(o, json_pack("{s:I, s:I, s:f, s:I, s:I, s:f}", "create_calls",
                                            (json_int_t)s->create_calls, "create_failures",
                                            (json_int_t)s->provider_failures, "backoff_s",
                                            ms_to_s(s->backoff_ms), "interruptions",
                                            (json_int_t)s->interruptions, "jobs_requeued",
                                            (json_int_t)s->jobs_requeued, "grace_gpu_hours",
                                            (double)s->grace_gpu_ms / 3600000.0));
        json_array_append_new(pools, o);
    }
    json_t *events = json_array();
    for (size_t i = 0; i < el->nevents; i++) {
        const struct sim_scale_event *e = &el->events[i];
        const char *type = scale_type_name(e->type);
        json_array_append_new(events, json_pack("{s:f, s:s, s:s, s:i, s:I, s:s}", "t_s",
                                                ms_to_s(e->t_ms), "pool", el->pools[e->pool].name,
                                                "action", type, "count", e->count, "node",
                                                (json_int_t)e->node_id, "reason", e->reason));
    }
    json_t *o =
        json_pack("{s:o, s:I, s:I, s:I, s:o}", "pools", pools, "decisions",
                  (json_int_t)el->decisions, "scale_events_total", (json_int_t)el->events_total,
                  "scale_events_kept", (json_int_t)el->nevents, "scale_events", events);
    json_object_update_new(o, cloud_json(res));
    return o;
}

/* Runs with budgets: each threshold crossed and what hard caps held. */
static json_t *budgets_json(const struct sim_config *cfg, const struct sim_result *res)
{
    const struct budget_set *bs = &cfg->budgets;
    const struct sim_budgets *b = res->budgets;
    json_t *projects = json_array();
    for (int k = 0; k < bs->count; k++) {
        const struct budget *x = &bs->items[k];
        json_t *pct = json_array();
        for (int a = 0; a < x->nalerts; a++)
            json_array_append_new(pct, json_integer(x->alert_pct[a]));
        long alerts = b->alerts_by_budget[k];
        json_array_append_new(
            projects,
            json_pack("{s:s, s:I, s:I, s:o, s:b, s:I, s:I, s:I, s:f, s:f, s:I}", "project",
                      x->project, "budget_daily_micros", (json_int_t)x->cap_micros[BUDGET_DAILY],
                      "budget_monthly_micros", (json_int_t)x->cap_micros[BUDGET_MONTHLY],
                      "alert_pct", pct, "hard_cap", x->hard_cap, "spent_last_day_micros",
                      (json_int_t)b->spent_micros[k][BUDGET_DAILY], "spent_last_month_micros",
                      (json_int_t)b->spent_micros[k][BUDGET_MONTHLY], "alerts", (json_int_t)alerts,
                      "held_s", ms_to_s(b->held_ms[k]), "held_job_s", ms_to_s(b->held_job_ms[k]),
                      "jobs_held", (json_int_t)b->jobs_held[k]));
    }
    json_t *alerts = json_array();
    for (size_t a = 0; a < b->nalerts; a++) {
        const struct sim_budget_alert *e = &b->alerts[a];
        json_array_append_new(
            alerts, json_pack("{s:f, s:s, s:s, s:i, s:I, s:I, s:b}", "t_s", ms_to_s(e->t_ms),
                              "project", bs->items[e->budget].project, "period",
                              budget_period_name(e->period), "pct", e->pct, "spent_micros",
                              (json_int_t)e->spent_micros, "cap_micros", (json_int_t)e->cap_micros,
                              "hard_cap_reached", bs->items[e->budget].hard_cap && e->pct >= 100));
    }
    return json_pack(
        "{s:s, s:o, s:I, s:I, s:o, s:f}", "clock",
        "virtual time 0 (the first submit) is 1970-01-01 00:00 UTC; periods are the UTC days "
        "and calendar months of virtual time; spend is GPU-time held at the pool's price per "
        "GPU-hour (core/budget.c)",
        "projects", projects, "alerts_total", (json_int_t)b->alerts_total, "alerts_kept",
        (json_int_t)b->nalerts, "alerts", alerts, "held_job_s", ms_to_s(b->held_job_ms_total));
}

static json_t *pool_config_json(const struct sim_pool *pl)
{
    if (!pl->elastic)
        return json_pack("{s:s, s:i, s:i, s:s, s:I, s:I}", "name", pl->name, "nodes", pl->nodes,
                         "gpus_per_node", pl->gpus_per_node, "gpu_model", pl->gpu_model,
                         "gpu_memory_mib", (json_int_t)pl->gpu_memory_mib,
                         "price_per_gpu_hour_micros", (json_int_t)pl->price_per_gpu_hour_micros);
    const struct pool *c = &pl->core;
    int64_t node_price = pl->price_per_node_hour_set ? c->price_per_node_hour_micros
                                                     : pl->price_per_gpu_hour_micros * pl->gpus_per_node;
    json_t *o = json_pack(
        "{s:s, s:b, s:i, s:i, s:i, s:s, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:i, s:I}",
        "name", pl->name, "elastic", 1, "min_nodes", c->min_nodes, "max_nodes", c->max_nodes,
        "gpus_per_node", pl->gpus_per_node, "gpu_model", pl->gpu_model, "gpu_memory_mib",
        (json_int_t)pl->gpu_memory_mib, "boot_time_s", (json_int_t)c->boot_time_s, "boot_timeout_s",
        (json_int_t)c->boot_timeout_s, "billing", billing_kind_name(c->billing),
        "price_per_node_hour_micros", (json_int_t)node_price, "spot_price_per_node_hour_micros",
        (json_int_t)c->spot_price_per_node_hour_micros, "pack_gpu_hours",
        (json_int_t)c->pack_gpu_hours, "scale_up_delay_s", (json_int_t)c->scale_up_delay_s,
        "scale_down_window_s", (json_int_t)c->scale_down_window_s, "scale_down_utilization",
        c->scale_down_utilization_pct, "cooldown_s", (json_int_t)c->cooldown_s);
    json_t *listed = json_array(), *calls = json_array();
    for (int i = 0; i < pl->ninterruptions; i++)
        json_array_append_new(listed,
                              json_pack("{s:i, s:f}", "node_index", pl->interruptions[i].node_index,
                                        "at_s", ms_to_s(pl->interruptions[i].at_ms)));
    for (int i = 0; i < pl->nfailing_calls; i++)
        json_array_append_new(calls, json_integer(pl->failing_calls[i]));
    json_object_update_new(o,
                           json_pack("{s:I, s:f, s:o, s:f, s:o}", "interruption_grace_s",
                                     (json_int_t)c->interruption_grace_s,
                                     "interruptions_per_node_hour", pl->interruptions_per_node_hour,
                                     "interruptions", listed, "provider_failure_rate",
                                     pl->provider_failure_rate, "provider_failed_calls", calls));
    return o;
}

json_t *sim_report_json(const struct sim_config *cfg, const struct trace *trace,
                        const char *trace_label, const struct sim_result *res)
{
    json_t *pools = json_array();
    for (int p = 0; p < cfg->npools; p++) {
        json_array_append_new(pools, pool_config_json(&cfg->pools[p]));
    }
    json_t *config = json_pack("{s:s, s:s, s:s, s:b, s:b, s:I, s:I, s:b, s:o}", "name", cfg->name,
                               "policy", cfg->policy, "placement", cfg->placement, "backfill",
                               cfg->backfill, "preempt", cfg->preempt, "preempt_interval_s",
                               (json_int_t)(cfg->preempt_interval_ms / 1000), "preempt_overhead_s",
                               (json_int_t)(cfg->preempt_overhead_ms / 1000), "oracle_runtime",
                               cfg->oracle_runtime, "pools", pools);
    if (cfg->eta)
        json_object_set_new(config, "eta", json_true());
    if (res->elastic) {
        json_object_set_new(config, "autoscale_interval_s",
                            json_integer(cfg->autoscale_interval_ms / 1000));
        json_object_set_new(config, "seed", json_integer((json_int_t)cfg->seed));
    }
    json_t *drops = json_array();
    for (int i = 0; i < trace->ndrops; i++)
        json_array_append_new(drops, json_pack("{s:s, s:I, s:I}", "reason", trace->drops[i].reason,
                                               "rows", (json_int_t)trace->drops[i].count,
                                               "first_line", (json_int_t)trace->drops[i].first_line));
    json_t *tr = json_pack("{s:s, s:I, s:I, s:I, s:o}", "source", trace_label, "rows_read",
                           (json_int_t)trace->rows_read, "jobs_kept", (json_int_t)trace->njobs,
                           "rows_dropped", (json_int_t)trace->rows_dropped, "dropped", drops);

    json_t *by_gpus = json_array();
    for (size_t b = 0; b < sizeof buckets / sizeof buckets[0]; b++) {
        json_t *s = job_stats(res, buckets[b].lo, buckets[b].hi);
        if (s && json_integer_value(json_object_get(s, "jobs")) == 0) {
            json_decref(s);
            continue;
        }
        json_object_set_new(s, "gpus", json_string(buckets[b].name));
        json_array_append_new(by_gpus, s);
    }
    json_t *all = job_stats(res, 0, 1 << 30);

    int64_t provisioned_gpu_ms = res->elastic ? res->elastic->gpu_ms_provisioned
                                              : (int64_t)res->gpus_provisioned * res->makespan_ms;
    int64_t total = 0, allocated = 0;
    json_t *by_pool = json_array();
    for (int p = 0; p < cfg->npools; p++) {
        int64_t price = cfg->pools[p].price_per_gpu_hour_micros;
        int64_t prov = (int64_t)res->gpus_provisioned_by_pool[p] * res->makespan_ms;
        int64_t c = billing_cost_micros(prov, price), a = billing_cost_micros(res->gpu_ms_allocated_by_pool[p], price);
        total += c;
        allocated += a;
        json_array_append_new(by_pool, json_pack("{s:s, s:f, s:f, s:I, s:I, s:I}", "pool",
                                                 cfg->pools[p].name, "gpu_hours_provisioned",
                                                 (double)prov / 3600000.0, "gpu_hours_allocated",
                                                 (double)res->gpu_ms_allocated_by_pool[p] / 3600000.0,
                                                 "cost_micros", (json_int_t)c, "allocated_micros",
                                                 (json_int_t)a, "idle_micros", (json_int_t)(c - a)));
    }
    json_t *by_project = json_array();
    for (size_t i = 0; i < res->nprojects; i++) {
        const struct sim_project *pr = &res->projects[i];
        int64_t gpu_ms = 0, c = 0;
        for (int p = 0; p < cfg->npools; p++) {
            gpu_ms += pr->gpu_ms_by_pool[p];
            c += billing_cost_micros(pr->gpu_ms_by_pool[p], cfg->pools[p].price_per_gpu_hour_micros);
        }
        json_array_append_new(by_project, json_pack("{s:s, s:I, s:f, s:I}", "project", pr->name,
                                                    "jobs", (json_int_t)pr->jobs, "gpu_hours",
                                                    (double)gpu_ms / 3600000.0, "cost_micros",
                                                    (json_int_t)c));
    }
    json_t *cost = NULL;
    if (res->elastic) {
        json_decref(by_pool);
        json_decref(by_project);
        cost = elastic_cost_json(res, &allocated);
    } else {
        cost = json_pack(
            "{s:s, s:s, s:I, s:I, s:I, s:o, s:o}", "billing", "on_demand", "note",
            "fixed-size cluster at on-demand prices; give a pool max_nodes for an elastic run "
            "metered by the core's billing (reserved, spot, pack)",
            "total_micros", (json_int_t)total, "allocated_micros", (json_int_t)allocated,
            "idle_micros", (json_int_t)(total - allocated), "by_pool", by_pool, "by_project",
            by_project);
    }

    long done = 0;
    for (size_t i = 0; i < res->njobs; i++)
        done += res->jobs[i].outcome == SIM_DONE;
    json_t *jobs = json_pack("{s:I, s:I, s:I, s:s}", "total", (json_int_t)res->njobs, "completed",
                             (json_int_t)done, "rejected", (json_int_t)res->rejected,
                             "first_reject_reason", res->first_reject_reason);
    json_t *util = json_pack(
        "{s:f, s:f, s:f}", "allocated_gpu_hours", (double)res->gpu_ms_allocated / 3600000.0,
        "provisioned_gpu_hours", (double)provisioned_gpu_ms / 3600000.0, "allocated_fraction",
        provisioned_gpu_ms ? (double)res->gpu_ms_allocated / (double)provisioned_gpu_ms : 0.0);
    /* Busy: only when the trace said how busy every job that ran was. */
    bool busy_known = trace->util_column && res->util_known_gpu_ms == res->gpu_ms_allocated;
    json_object_set_new(util, "busy_gpu_hours",
                        busy_known ? json_real((double)res->gpu_ms_busy / 3600000.0) : json_null());
    json_object_set_new(util, "busy_fraction",
                        busy_known && provisioned_gpu_ms
                            ? json_real((double)res->gpu_ms_busy / (double)provisioned_gpu_ms)
                            : json_null());
    json_object_set_new(util, "busy_of_allocated",
                        busy_known && res->gpu_ms_allocated
                            ? json_real((double)res->gpu_ms_busy / (double)res->gpu_ms_allocated)
                            : json_null());
    json_object_set_new(util, "util_known_gpu_hours",
                        json_real((double)res->util_known_gpu_ms / 3600000.0));
    json_object_set_new(
        util, "busy_source",
        json_string(!trace->util_column ? "none: the trace has no GPU utilisation column"
                    : busy_known        ? "the trace's per-job GPU utilisation"
                                        : "incomplete: some jobs that ran have no utilisation"));
    json_t *frag = json_pack(
        "{s:s, s:f}", "definition",
        "share of free GPU-time that was on partly used nodes (time-weighted); per bucket in "
        "timeline.fragmentation",
        "free_on_partly_used_nodes", res->free_gpu_ms ? (double)res->free_partial_gpu_ms / (double)res->free_gpu_ms : 0.0);
    json_t *sched = json_pack("{s:I, s:I, s:I}", "event_batches", (json_int_t)res->batches,
                              "passes", (json_int_t)res->passes, "starts", (json_int_t)res->starts);
    json_t *root = json_pack(
        "{s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:i, s:o, s:o, s:I, s:o, s:o, s:o}",
        "tide_sim_report", 1, "config", config, "trace", tr, "jobs", jobs, "jct_s",
        json_incref(json_object_get(all, "jct_s")), "wait_s",
        json_incref(json_object_get(all, "wait_s")), "by_gpus", by_gpus, "makespan_s",
        ms_to_s(res->makespan_ms), "gpus_provisioned", res->gpus_provisioned, "utilisation", util,
        "fragmentation", frag, "preemptions", (json_int_t)res->preemptions, "cost", cost,
        "scheduler", sched, "timeline", timeline_json(cfg, res));
    json_decref(all);
    if (res->elastic)
        json_object_set_new(root, "elastic", elastic_json(res));
    if (res->budgets)
        json_object_set_new(root, "budgets", budgets_json(cfg, res));
    if (cfg->eta)
        json_object_set_new(root, "eta", sim_eta_report_json(res));
    return root;
}

/* --- tables --- */

static const json_t *lookup(const json_t *root, const char *path);

/* "a.b.c" lookups for the tables; 0 when missing or null. */
static double num(const json_t *root, const char *path)
{
    const json_t *v = lookup(root, path);
    return v ? json_number_value(v) : 0.0;
}

void sim_money_text(char *out, size_t size, int64_t micros)
{
    /* The magnitude unsigned, so that INT64_MIN has one too; cents cut, not rounded. */
    uint64_t m = micros < 0 ? 0 - (uint64_t)micros : (uint64_t)micros;
    snprintf(out, size, "%s%llu.%02llu", micros < 0 ? "-" : "", (unsigned long long)(m / 1000000),
             (unsigned long long)(m % 1000000 / 10000));
}

static void money(char *out, size_t size, double micros)
{
    /* Report values are int64; a double at the edge would not convert back. */
    int64_t m = micros >= 9.2e18 ? INT64_MAX : micros <= -9.2e18 ? INT64_MIN : (int64_t)micros;
    sim_money_text(out, size, m);
}

/* The value at path, or NULL (missing or null). */
static const json_t *lookup(const json_t *root, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *v = root;
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && v;
         tok = strtok_r(NULL, ".", &save))
        v = json_object_get(v, tok);
    return json_is_null(v) ? NULL : v;
}

static const struct {
    const char *label, *path;
    int kind; /* 0 number, 1 hours from s, 2 percent, 3 money, 4 integer, 5 percent or n/a */
} rows[] = {
    {"jobs", "jobs.total", 4},
    {"  completed", "jobs.completed", 4},
    {"  rejected (never fit)", "jobs.rejected", 4},
    {"avg JCT (h)", "jct_s.avg", 1},
    {"p50 JCT (h)", "jct_s.p50", 1},
    {"p95 JCT (h)", "jct_s.p95", 1},
    {"p99 JCT (h)", "jct_s.p99", 1},
    {"avg wait (h)", "wait_s.avg", 1},
    {"p50 wait (h)", "wait_s.p50", 1},
    {"p95 wait (h)", "wait_s.p95", 1},
    {"p99 wait (h)", "wait_s.p99", 1},
    {"makespan (h)", "makespan_s", 1},
    {"GPUs provisioned", "gpus_provisioned", 4},
    {"GPU utilisation", "utilisation.allocated_fraction", 2},
    {"GPU busy (trace util)", "utilisation.busy_fraction", 5},
    {"fragmentation", "fragmentation.free_on_partly_used_nodes", 2},
    {"preemptions", "preemptions", 4},
    {"cost (on-demand)", "cost.total_micros", 3},
    {"  of which idle", "cost.idle_micros", 3},
};

static void cell(char *out, size_t size, const json_t *r, int row)
{
    double v = num(r, rows[row].path);
    switch (rows[row].kind) {
    case 1: snprintf(out, size, "%.2f", v / 3600.0); break;
    case 2: snprintf(out, size, "%.1f%%", v * 100.0); break;
    case 3: money(out, size, v); break;
    case 4: snprintf(out, size, "%.0f", v); break;
    case 5:
        if (lookup(r, rows[row].path))
            snprintf(out, size, "%.1f%%", v * 100.0);
        else
            snprintf(out, size, "n/a");
        break;
    default: snprintf(out, size, "%.3f", v); break;
    }
}

/* Extra rows some runs have (a run without the section shows -): budgets,
 * spot interruptions and provider failures. */
static void section_rows(FILE *out, json_t *const *reports, size_t n, const char *section)
{
    static const struct {
        const char *section, *label, *path;
        int kind; /* 1 hours from s, 4 integer, 5 percent from a fraction */
    } extra[] = {
        {"budgets", "budget alerts", "budgets.alerts_total", 4},
        {"budgets", "budget-held job-h", "budgets.held_job_s", 1},
        {"elastic", "spot interruptions", "elastic.interruptions.interruptions", 4},
        {"elastic", "  jobs requeued", "elastic.interruptions.jobs_requeued", 4},
        {"elastic", "  delay job-h", "elastic.interruptions.delay_job_s", 1},
        {"elastic", "provider failures", "elastic.provider.create_failures", 4},
        {"eta", "ETA: jobs that waited", "eta.waited.jobs", 4},
        {"eta", "  p50 |error| s", "eta.waited.abs_error_s.p50", 4},
        {"eta", "  p90 |error| s", "eta.waited.abs_error_s.p90", 4},
        {"eta", "  p50 |error|/wait", "eta.waited.rel_error.p50", 5},
        {"eta", "  p90 |error|/wait", "eta.waited.rel_error.p90", 5},
        {"eta", "  p50 wait s", "eta.waited.wait_s_p50", 4},
    };
    for (size_t row = 0; row < sizeof extra / sizeof extra[0]; row++) {
        if (strcmp(extra[row].section, section))
            continue;
        fprintf(out, "%-24s", extra[row].label);
        for (size_t i = 0; i < n; i++) {
            char c[48] = "-";
            const json_t *v = lookup(reports[i], extra[row].path);
            if (v && extra[row].kind == 1)
                snprintf(c, sizeof c, "%.2f", json_number_value(v) / 3600.0);
            else if (v && extra[row].kind == 5)
                snprintf(c, sizeof c, "%.1f%%", 100.0 * json_number_value(v));
            else if (v)
                snprintf(c, sizeof c, "%.0f", json_number_value(v));
            fprintf(out, " %16s", c);
        }
        fputc('\n', out);
    }
}

/* Elastic runs' extra rows: nodes created and released, node-hours and
 * cost by billing kind (a fixed-size run's column shows -). */
static void elastic_rows(FILE *out, json_t *const *reports, size_t n)
{
    for (int row = 0; row < 7; row++) {
        static const char *const labels[] = {"nodes created",  "nodes released", "node-hours",
                                             "  cost on_demand", "  cost reserved", "  cost spot",
                                             "  cost pack"};
        fprintf(out, "%-24s", labels[row]);
        for (size_t i = 0; i < n; i++) {
            const json_t *el = json_object_get(reports[i], "elastic");
            char c[48] = "-";
            if (el && row < 3) {
                double sum = 0;
                size_t k;
                const json_t *p;
                json_array_foreach(json_object_get(el, "pools"), k, p)
                    sum += json_number_value(json_object_get(
                        p, row == 0 ? "created" : row == 1 ? "released" : "node_hours"));
                snprintf(c, sizeof c, row == 2 ? "%.1f" : "%.0f", sum);
            } else if (el)
                money(c, sizeof c,
                      num(reports[i], row == 3   ? "cost.by_kind.on_demand"
                                      : row == 4 ? "cost.by_kind.reserved"
                                      : row == 5 ? "cost.by_kind.spot"
                                                 : "cost.by_kind.pack"));
            fprintf(out, " %16s", c);
        }
        fputc('\n', out);
    }
}

void sim_report_compare(FILE *out, json_t *const *reports, size_t n)
{
    fprintf(out, "%-24s", "");
    for (size_t i = 0; i < n; i++) {
        const char *name = json_string_value(json_object_get(json_object_get(reports[i], "config"), "name"));
        fprintf(out, " %16.16s", name ? name : "?");
    }
    fprintf(out, "\n%-24s", "policy");
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_object_get(reports[i], "config");
        char p[64];
        snprintf(p, sizeof p, "%s%s%s", json_string_value(json_object_get(c, "policy")),
                 json_is_true(json_object_get(c, "backfill")) ? "+bf" : "",
                 json_is_true(json_object_get(c, "preempt")) ? "+pre" : "");
        fprintf(out, " %16.16s", p);
    }
    fputc('\n', out);
    bool elastic = false;
    for (size_t i = 0; i < n; i++)
        elastic |= json_object_get(reports[i], "elastic") != NULL;
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        fprintf(out, "%-24s", elastic && rows[row].kind == 3 && row + 1 < sizeof rows / sizeof rows[0]
                                  ? "cost (billed)" : rows[row].label);
        for (size_t i = 0; i < n; i++) {
            char c[48];
            cell(c, sizeof c, reports[i], (int)row);
            fprintf(out, " %16s", c);
        }
        fputc('\n', out);
    }
    if (elastic) {
        elastic_rows(out, reports, n);
        section_rows(out, reports, n, "elastic");
    }
    bool budgets = false;
    for (size_t i = 0; i < n; i++)
        budgets |= json_object_get(reports[i], "budgets") != NULL;
    if (budgets)
        section_rows(out, reports, n, "budgets");
    bool eta = false;
    for (size_t i = 0; i < n; i++)
        eta |= json_object_get(reports[i], "eta") != NULL;
    if (eta)
        section_rows(out, reports, n, "eta");
}

/* A single run's budget alerts, one line each. */
static void budget_alerts_table(FILE *out, const json_t *report)
{
    const json_t *b = json_object_get(report, "budgets");
    if (!b)
        return;
    fprintf(out,
            "\nbudget alerts (virtual time; 0 is 1970-01-01 00:00 UTC):\n%10s  %-16s %-8s %5s %12s "
            "%12s\n",
            "t (h)", "project", "period", "pct", "spent", "cap");
    size_t i;
    const json_t *a;
    json_array_foreach(json_object_get(b, "alerts"), i, a)
    {
        char spent[48], cap[48];
        money(spent, sizeof spent, num(a, "spent_micros"));
        money(cap, sizeof cap, num(a, "cap_micros"));
        fprintf(out, "%10.2f  %-16.16s %-8s %4.0f%% %12s %12s%s\n", num(a, "t_s") / 3600.0,
                json_string_value(json_object_get(a, "project")),
                json_string_value(json_object_get(a, "period")), num(a, "pct"), spent, cap,
                json_is_true(json_object_get(a, "hard_cap_reached")) ? "  hard cap: jobs wait"
                                                                     : "");
    }
    if (num(b, "alerts_total") > num(b, "alerts_kept"))
        fprintf(out, "(%.0f more not kept)\n", num(b, "alerts_total") - num(b, "alerts_kept"));
    fprintf(out, "jobs waited %.0f job-seconds (%.2f job-hours) with \"budget exhausted\"\n",
            num(b, "held_job_s"), num(b, "held_job_s") / 3600.0);
}

void sim_report_table(FILE *out, const json_t *report)
{
    json_t *one = (json_t *)report;
    sim_report_compare(out, &one, 1);
    fprintf(out, "\n%-8s %8s %12s %12s %12s %12s\n", "GPUs", "jobs", "avg JCT h", "p95 JCT h",
            "avg wait h", "p95 wait h");
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(report, "by_gpus"), i, b)
    {
        fprintf(out, "%-8s %8.0f %12.2f %12.2f %12.2f %12.2f\n",
                json_string_value(json_object_get(b, "gpus")), num(b, "jobs"),
                num(b, "jct_s.avg") / 3600, num(b, "jct_s.p95") / 3600,
                num(b, "wait_s.avg") / 3600, num(b, "wait_s.p95") / 3600);
    }
    budget_alerts_table(out, report);
    fprintf(out, "\ncost is %s\n",
            json_string_value(json_object_get(json_object_get(report, "cost"), "note")));
}

int sim_report_timeline_csv(FILE *out, const json_t *report)
{
    const json_t *tl = json_object_get(report, "timeline");
    const json_t *t = json_object_get(tl, "t_s"), *q = json_object_get(tl, "queued"),
                 *u = json_object_get(tl, "gpus_used"), *p = json_object_get(tl, "gpus_provisioned"),
                 *f = json_object_get(tl, "fragmentation"), *c = json_object_get(tl, "cost_cum_micros");
    fprintf(out, "t_s,queued,gpus_used,gpus_provisioned,fragmentation,cost_cum_micros\n");
    for (size_t i = 0; i < json_array_size(t); i++)
        /* gpus_provisioned: an integer in fixed runs, a bucket's mean (a
         * real) in elastic ones, which json_integer_value would read as 0. */
        fprintf(out, "%.3f,%.3f,%.3f,%.3f,%.4f,%lld\n", json_number_value(json_array_get(t, i)),
                json_number_value(json_array_get(q, i)), json_number_value(json_array_get(u, i)),
                json_number_value(json_array_get(p, i)), json_number_value(json_array_get(f, i)),
                (long long)json_integer_value(json_array_get(c, i)));
    return ferror(out) ? -1 : 0;
}

int sim_report_jobs_csv(FILE *out, const struct sim_result *res, size_t njobs)
{
    static const char *const outcome[] = {[SIM_DONE] = "completed", [SIM_REJECTED] = "rejected"};
    fprintf(out, "job,submit_s,start_s,finish_s,node,outcome\n");
    for (size_t i = 0; i < njobs; i++) {
        const struct sim_job_result *j = &res->jobs[i];
        unsigned o = j->outcome == SIM_REJECTED ? SIM_REJECTED : SIM_DONE;
        if (j->first_start_ms >= 0)
            fprintf(out, "%zu,%.3f,%.3f,%.3f,%d,%s\n", i + 1, j->submit_ms / 1000.0,
                    j->first_start_ms / 1000.0, j->finish_ms / 1000.0, (int)j->first_node, outcome[o]);
        else
            fprintf(out, "%zu,%.3f,,,,%s\n", i + 1, j->submit_ms / 1000.0, outcome[o]);
    }
    return ferror(out) ? -1 : 0;
}
