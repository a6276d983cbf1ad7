/* What the pools show: GET /v1/pools, the pool fields of a node's JSON and
 * the pool, cost and budget metrics. */
#include <stdio.h>
#include <string.h>

#include "common/fsutil.h"
#include "core/forecast.h"
#include "server/pool_loop.h"
#include "server/pool_loop_state.h"

void pool_money(char *buf, size_t size, int64_t micros)
{
    /* The sign apart: -14013000 is "-14.013000", not "-14.-13000". */
    uint64_t m = micros < 0 ? 0 - (uint64_t)micros : (uint64_t)micros;
    snprintf(buf, size, "%s%llu.%06llu", micros < 0 ? "-" : "", (unsigned long long)(m / 1000000),
             (unsigned long long)(m % 1000000));
}

/* Seconds the pool's ready nodes have been idle, summed. */
static int64_t pool_idle_ms(const struct cluster *c, const struct pool *pool, int64_t now)
{
    int64_t idle = 0;
    for (size_t i = 0; i < c->nnodes; i++)
        if (!strcmp(c->nodes[i].pool, pool->name) && c->nodes[i].state == NODE_READY &&
            c->nodes[i].idle_since_ms)
            idle += now - c->nodes[i].idle_since_ms;
    return idle;
}

int api_pools_list(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    json_t *pools = json_array();
    int64_t now = clock_now_ms();
    pthread_mutex_lock(&srv->lock);
    struct pool_loop *pl = srv->pool_loop;
    for (int p = 0; pl && p < srv->cfg.npools; p++) {
        const struct pool *pool = &srv->cfg.pools[p];
        int counts[NODE_STATE_COUNT];
        autoscaler_count_nodes(&srv->cluster, pool, counts);
        json_t *by_state = json_object();
        for (int s = 0; s < NODE_STATE_COUNT; s++)
            json_object_set_new(by_state, node_state_name((enum node_state)s), json_integer(counts[s]));
        json_t *projects = json_array();
        for (size_t u = 0; u < pl->bill.nusage; u++) {
            const struct billing_usage *us = &pl->bill.usage[u];
            /* a project-limited token sees its projects' spend only, as in /v1/usage */
            if (us->pool != p || !auth_project_allowed(req, us->project))
                continue;
            int64_t c = billing_usage_cost_micros(&pl->bill, srv->cfg.pools, us);
            char cs[40];
            pool_money(cs, sizeof cs, c);
            json_array_append_new(projects, json_pack("{s:s, s:f, s:I, s:s}", "project", us->project,
                                                      "gpu_seconds", (double)us->gpu_ms / 1000.0,
                                                      "cost_micros", (json_int_t)c, "cost", cs));
        }
        int64_t cost = billing_pool_cost_micros(&pl->bill, srv->cfg.pools, p);
        int64_t idle_cost = billing_pool_idle_cost_micros(&pl->bill, srv->cfg.pools, p);
        char cost_s[40], idle_s[40], price_s[40];
        pool_money(cost_s, sizeof cost_s, cost);
        pool_money(idle_s, sizeof idle_s, idle_cost);
        /* what a node of it costs now: a spot pool's spot price */
        int64_t price = pool->billing == BILLING_SPOT && pool->spot_price_per_node_hour_micros > 0
                            ? pool->spot_price_per_node_hour_micros
                            : pool->price_per_node_hour_micros;
        pool_money(price_s, sizeof price_s, price);
        json_t *o = json_pack("{s:s, s:s, s:i, s:I, s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:s,"
                              " s:I, s:o, s:i, s:i}",
            "name", pool->name, "gpu", pool->gpu_model, "gpus_per_node", pool->gpus_per_node,
            "gpu_memory_mib", (json_int_t)pool->gpu_memory_mib, "region", pool->region,
            "driver", pool->driver, "provider", pool->provider, "billing",
            billing_kind_name(pool->billing), "min_nodes", pool->min_nodes, "max_nodes",
            pool->max_nodes, "boot_time_s", (json_int_t)pool->boot_time_s,
            "price_per_node_hour_micros", (json_int_t)price,
            "price_per_node_hour", price_s, "scale_down_window_s",
            (json_int_t)pool->scale_down_window_s, "nodes", by_state, "pending_jobs",
            pl->as.state[p].pending_jobs, "nodes_wanted", pl->as.state[p].nodes_wanted);
        json_object_set_new(o, "pull_time_s", json_integer(pool->pull_time_s));
        json_t *images = json_array();
        for (int k = 0; k < pool->nimages; k++)
            json_array_append_new(images, json_string(pool->images[k]));
        json_object_set_new(o, "images", images);
        json_object_set_new(o, "cost_micros", json_integer(cost));
        json_object_set_new(o, "cost", json_string(cost_s));
        json_object_set_new(o, "idle_cost_micros", json_integer(idle_cost));
        json_object_set_new(o, "idle_cost", json_string(idle_s));
        json_object_set_new(o, "node_seconds", json_real((double)pl->bill.pools[p].node_ms / 1000.0));
        json_object_set_new(o, "gpu_seconds_used", json_real((double)pl->bill.pools[p].gpu_ms / 1000.0));
        json_object_set_new(o, "idle_seconds",
                            json_real((double)pool_idle_ms(&srv->cluster, pool, now) / 1000.0));
        json_object_set_new(o, "held_back", pl->as.state[p].held_back[0]
                                                ? json_string(pl->as.state[p].held_back)
                                                : json_null());
        json_object_set_new(o, "scale_ups", json_integer(pl->scale_ups[p]));
        json_object_set_new(o, "scale_downs", json_integer(pl->scale_downs[p]));
        json_object_set_new(o, "provider_failures", json_integer(pl->provider_failures[p]));
        json_object_set_new(o, "interruptions", json_integer(pl->interruptions[p]));
        json_object_set_new(o, "projects", projects);
        json_array_append_new(pools, o);
    }
    pthread_mutex_unlock(&srv->lock);
    reply->json = json_pack("{s:o}", "pools", pools);
    return 0;
}

void pool_loop_node_json(struct server *srv, const struct node *n, json_t *obj, int64_t now_ms)
{
    int p = n->pool[0] ? pool_find(srv->cfg.pools, srv->cfg.npools, n->pool) : -1;
    json_object_set_new(obj, "pool", n->pool[0] ? json_string(n->pool) : json_null());
    if (p < 0 || !n->created_ms) {
        json_object_set_new(obj, "age_s", json_null());
        json_object_set_new(obj, "cost_micros", json_null());
        json_object_set_new(obj, "idle_s", json_null());
        return;
    }
    int64_t end = n->ended_ms ? n->ended_ms : now_ms;
    json_object_set_new(obj, "age_s", json_real((double)(end - n->created_ms) / 1000.0));
    json_object_set_new(obj, "cost_micros",
                        json_integer(billing_node_cost_micros(&srv->cfg.pools[p], n, now_ms)));
    json_object_set_new(obj, "interrupt_deadline_ms", n->interrupt_deadline_ms
                                                          ? json_integer(n->interrupt_deadline_ms)
                                                          : json_null());
    json_object_set_new(obj, "idle_s", n->state == NODE_READY && n->idle_since_ms
                                           ? json_real((double)(now_ms - n->idle_since_ms) / 1000.0)
                                           : json_real(0));
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Money as a decimal amount of the price's currency (Prometheus wants
 * plain numbers; micros, printed exactly). */
static void print_money(FILE *out, int64_t micros)
{
    char buf[40];
    pool_money(buf, sizeof buf, micros);
    fprintf(out, "%s\n", buf);
}

static const char *const call_kind_names[POOL_CALL_KINDS] = {"create", "delete", "list"};

void pool_loop_metrics(struct server *srv, FILE *out)
{
    struct pool_loop *pl = srv->pool_loop;
    if (!pl)
        return;
    family(out, "tide_pool_nodes", "gauge", "Pool nodes by pool and state.");
    for (int p = 0; p < srv->cfg.npools; p++) {
        int counts[NODE_STATE_COUNT];
        autoscaler_count_nodes(&srv->cluster, &srv->cfg.pools[p], counts);
        for (int s = 0; s < NODE_STATE_COUNT; s++)
            fprintf(out, "tide_pool_nodes{pool=\"%s\",state=\"%s\"} %d\n", srv->cfg.pools[p].name,
                    node_state_name((enum node_state)s), counts[s]);
    }
    family(out, "tide_pool_nodes_min", "gauge", "The pool's min_nodes.");
    for (int p = 0; p < srv->cfg.npools; p++)
        fprintf(out, "tide_pool_nodes_min{pool=\"%s\"} %d\n", srv->cfg.pools[p].name,
                srv->cfg.pools[p].min_nodes);
    family(out, "tide_pool_nodes_max", "gauge", "The pool's max_nodes.");
    for (int p = 0; p < srv->cfg.npools; p++)
        fprintf(out, "tide_pool_nodes_max{pool=\"%s\"} %d\n", srv->cfg.pools[p].name,
                srv->cfg.pools[p].max_nodes);
    family(out, "tide_pool_cost_total", "counter",
           "Cost so far, in the currency of the pool's prices, by pool and billing kind.");
    for (int p = 0; p < srv->cfg.npools; p++) {
        fprintf(out, "tide_pool_cost_total{pool=\"%s\",billing=\"%s\"} ", srv->cfg.pools[p].name,
                billing_kind_name(srv->cfg.pools[p].billing));
        print_money(out, billing_pool_cost_micros(&pl->bill, srv->cfg.pools, p));
    }
    family(out, "tide_pool_idle_cost_total", "counter", "The part of the pool's cost no task used.");
    for (int p = 0; p < srv->cfg.npools; p++) {
        fprintf(out, "tide_pool_idle_cost_total{pool=\"%s\"} ", srv->cfg.pools[p].name);
        print_money(out, billing_pool_idle_cost_micros(&pl->bill, srv->cfg.pools, p));
    }
    family(out, "tide_pool_gpu_seconds_total", "counter", "GPU-seconds held by tasks on the pool's nodes.");
    for (int p = 0; p < srv->cfg.npools; p++)
        fprintf(out, "tide_pool_gpu_seconds_total{pool=\"%s\"} %.3f\n", srv->cfg.pools[p].name,
                (double)pl->bill.pools[p].gpu_ms / 1000.0);
    family(out, "tide_project_cost_total", "counter",
           "Cost attributed to a project by its share of the pool's GPU-seconds.");
    for (size_t u = 0; u < pl->bill.nusage; u++) {
        fprintf(out, "tide_project_cost_total{project=\"%s\",pool=\"%s\"} ", pl->bill.usage[u].project,
                srv->cfg.pools[pl->bill.usage[u].pool].name);
        print_money(out, billing_usage_cost_micros(&pl->bill, srv->cfg.pools, &pl->bill.usage[u]));
    }
    family(out, "tide_project_gpu_seconds_total", "counter",
           "GPU-seconds a project's tasks held on pool nodes, by pool.");
    for (size_t u = 0; u < pl->bill.nusage; u++)
        fprintf(out, "tide_project_gpu_seconds_total{project=\"%s\",pool=\"%s\"} %.3f\n",
                pl->bill.usage[u].project, srv->cfg.pools[pl->bill.usage[u].pool].name,
                (double)pl->bill.usage[u].gpu_ms / 1000.0);
    const struct budget_set *bs = &srv->cfg.budgets;
    static const char *const budget_families[][2] = {
        {"tide_project_budget", "Budget cap by project and period."},
        {"tide_project_budget_spent", "Spend this period at pool prices, by project and period."},
        {"tide_project_budget_alert_ratio", "Highest alert threshold crossed this period (1 is 100 %)."},
    };
    /* each family whole, its samples after its own HELP and TYPE */
    for (int f = 0; bs->count && f < 3; f++) {
        family(out, budget_families[f][0], "gauge", budget_families[f][1]);
        for (int i = 0; i < bs->count; i++)
            for (int k = 0; k < BUDGET_PERIODS; k++) {
                const struct budget *b = &bs->items[i];
                if (b->cap_micros[k] <= 0)
                    continue;
                fprintf(out, "%s{project=\"%s\",period=\"%s\"} ", budget_families[f][0],
                        b->project, budget_period_name((enum budget_period)k));
                if (f == 0)
                    print_money(out, b->cap_micros[k]);
                else if (f == 1)
                    print_money(out, budget_spent_micros(b, (enum budget_period)k));
                else
                    fprintf(out, "%.2f\n", b->alerted_pct[k] / 100.0);
            }
    }
    static const char *const counters[][2] = {
        {"tide_pool_scale_up_nodes_total", "Nodes the autoscaler asked for."},
        {"tide_pool_scale_down_nodes_total", "Nodes released after being idle."},
        {"tide_pool_nodes_failed_total", "Nodes failed (boot timeout, lost)."},
        {"tide_provider_failures_total", "Provider calls that failed, all kinds."},
        {"tide_pool_interruptions_total", "Spot interruptions of pool nodes."}};
    for (int k = 0; k < 5; k++) {
        family(out, counters[k][0], "counter", counters[k][1]);
        for (int p = 0; p < srv->cfg.npools; p++) {
            long long v = k == 0 ? pl->scale_ups[p] : k == 1 ? pl->scale_downs[p]
                          : k == 2 ? pl->nodes_failed[p] : k == 3 ? pl->provider_failures[p]
                                   : pl->interruptions[p];
            fprintf(out, "%s{pool=\"%s\"} %lld\n", counters[k][0], srv->cfg.pools[p].name, v);
        }
    }
    family(out, "tide_provider_calls_total", "counter", "Provider calls made, by pool and call.");
    for (int p = 0; p < srv->cfg.npools; p++)
        for (int k = 0; k < POOL_CALL_KINDS; k++)
            fprintf(out, "tide_provider_calls_total{pool=\"%s\",call=\"%s\"} %lld\n",
                    srv->cfg.pools[p].name, call_kind_names[k], pl->provider_calls[p][k]);
    family(out, "tide_provider_call_failures_total", "counter",
           "Provider calls that failed, by pool and call.");
    for (int p = 0; p < srv->cfg.npools; p++)
        for (int k = 0; k < POOL_CALL_KINDS; k++)
            fprintf(out, "tide_provider_call_failures_total{pool=\"%s\",call=\"%s\"} %lld\n",
                    srv->cfg.pools[p].name, call_kind_names[k], pl->provider_call_failures[p][k]);
    family(out, "tide_autoscaler_decisions_total", "counter",
           "Autoscaler decisions carried out, by pool and decision (create counts calls, not nodes).");
    for (int p = 0; p < srv->cfg.npools; p++)
        for (int k = 0; k < POOL_DECISION_KINDS; k++)
            fprintf(out, "tide_autoscaler_decisions_total{pool=\"%s\",decision=\"%s\"} %lld\n",
                    srv->cfg.pools[p].name, pool_action_type_name((enum pool_action_type)k),
                    pl->decisions[p][k]);
    /* each family whole, as the text format wants */
    for (int k = 0; k < 2; k++) {
        if (k == 0)
            family(out, "tide_pool_forecast_gpus", "gauge",
                   "GPUs the forecast expects wanted one boot time ahead.");
        else
            family(out, "tide_pool_forecast_error_gpus", "gauge",
                   "Mean absolute error of past hourly forecasts.");
        for (int p = 0; p < srv->cfg.npools; p++) {
            const struct pool *pool = &srv->cfg.pools[p];
            if (!pool->predictive)
                continue;
            const struct forecast *f = &pl->as.state[p].forecast;
            if (k == 0)
                fprintf(out, "tide_pool_forecast_gpus{pool=\"%s\"} %.3f\n", pool->name,
                        forecast_predict(f, clock_now_ms() + pool_boot_estimate_s(pool) * 1000));
            else
                fprintf(out, "tide_pool_forecast_error_gpus{pool=\"%s\"} %.3f\n", pool->name,
                        forecast_error(f));
        }
    }
}
