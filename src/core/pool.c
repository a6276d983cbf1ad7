/* Pool defaults and the questions the autoscaler and billing ask of a pool. */
#include "core/pool.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/placement.h"

#include "core/core_banned.h"

static const char *const billing_names[] = {"on_demand", "reserved", "spot", "pack"};

const char *billing_kind_name(enum billing_kind k)
{
    return (unsigned)k < sizeof billing_names / sizeof billing_names[0] ? billing_names[k]
                                                                        : "unknown";
}

int billing_kind_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof billing_names / sizeof billing_names[0]; i++)
        if (!strcmp(name, billing_names[i]))
            return (int)i;
    return -1;
}

int64_t pool_boot_estimate_s(const struct pool *p)
{
    return p->boot_time_s + p->pull_time_s;
}

void pool_defaults(struct pool *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->gpu_model, sizeof p->gpu_model, "H200");
    p->gpus_per_node = 1;
    p->gpu_memory_mib = 141 * 1024;
    snprintf(p->driver, sizeof p->driver, "fake");
    snprintf(p->provider, sizeof p->provider, "local");
    p->min_nodes = 0;
    p->max_nodes = 4;
    p->boot_time_s = 5;
    p->boot_timeout_s = 300;
    p->billing = BILLING_ON_DEMAND;
    p->scale_up_delay_s = 0;
    p->scale_down_utilization_pct = 20;
    p->scale_down_window_s = 300;
    p->cooldown_s = 60;
    p->interruption_grace_s = 30;
}

bool pool_fits_job(const struct pool *p, const struct job *job)
{
    return pool_fits_share(p, job, job->gpus);
}

bool pool_fits_share(const struct pool *p, const struct job *job, int gpus)
{
    if (gpus > p->gpus_per_node)
        return false;
    if (gpus > 0 && job->gpu_memory_mib > p->gpu_memory_mib)
        return false;
    if (gpus > 0 && job->gpu_model[0] && !gpu_model_matches(job->gpu_model, p->gpu_model))
        return false;
    return true;
}

/* Whether a GPU called name (as NVML says it: "NVIDIA A100-SXM4-80GB",
 * "Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3") is of the pool's model
 * (as configs say it: "A100", "H100"): the model as a whole word of the
 * name, in any case, or the name matching it as a pattern ("A100*"). */
static bool pool_model_names(const char *model, const char *name)
{
    if (gpu_model_matches(model, name))
        return true;
    size_t n = strlen(model);
    for (const char *s = name; (s = strcasestr(s, model)); s++) {
        bool starts = s == name || !isalnum((unsigned char)s[-1]);
        bool ends = !isalnum((unsigned char)s[n]);
        if (starts && ends)
            return true;
    }
    return false;
}

bool pool_node_differs(const struct pool *p, const struct node *n, char *why, size_t size)
{
    int whole = 0;
    const struct gpu *odd = NULL; /* a GPU of another model */
    for (int i = 0; i < n->ngpus; i++) {
        const struct gpu *g = &n->gpus[i];
        if (g->mig_profile[0])
            continue;
        whole++;
        if (!odd && p->gpu_model[0] && !pool_model_names(p->gpu_model, g->name))
            odd = g;
    }
    if (whole == p->gpus_per_node && !odd)
        return false;
    if (whole != p->gpus_per_node)
        snprintf(why, size, "node %s has %d GPU%s; pool %s's nodes have %d (gpus_per_node)",
                 n->name, whole, whole == 1 ? "" : "s", p->name, p->gpus_per_node);
    else
        snprintf(why, size, "node %s has a %s; pool %s's nodes have %s (gpu)", n->name, odd->name,
                 p->name, p->gpu_model);
    return true;
}

int64_t pool_price_per_gpu_hour_micros(const struct pool *p)
{
    int64_t price = p->billing == BILLING_SPOT && p->spot_price_per_node_hour_micros
                        ? p->spot_price_per_node_hour_micros
                        : p->price_per_node_hour_micros;
    return p->gpus_per_node > 0 ? price / p->gpus_per_node : price;
}

static bool window_open(const struct pool_window *w, int64_t now_ms)
{
    int64_t day = now_ms >= 0 ? now_ms / 86400000 : (now_ms - 86399999) / 86400000;
    int minute = (int)((now_ms - day * 86400000) / 60000);
    int dow = (int)(((day + 3) % 7 + 7) % 7); /* 1970-01-01 was a Thursday; 0 is Monday */
    if (w->from_min <= w->to_min)
        return (w->days >> dow & 1) && minute >= w->from_min && minute < w->to_min;
    /* Past midnight: the evening of a listed day, or the morning after it. */
    int yesterday = (dow + 6) % 7;
    return ((w->days >> dow & 1) && minute >= w->from_min) ||
           ((w->days >> yesterday & 1) && minute < w->to_min);
}

int pool_min_nodes_at(const struct pool *p, int64_t now_ms)
{
    int min = p->min_nodes;
    for (int i = 0; i < p->nwindows; i++)
        if (p->windows[i].min_nodes > min && window_open(&p->windows[i], now_ms))
            min = p->windows[i].min_nodes;
    return min < p->max_nodes ? min : p->max_nodes;
}

int pool_find(const struct pool *pools, int npools, const char *name)
{
    for (int i = 0; i < npools; i++)
        if (!strcmp(pools[i].name, name))
            return i;
    return -1;
}

int64_t pool_backoff_ms(int failures)
{
    if (failures <= 0)
        return 0;
    int64_t ms = (1LL << (failures < 6 ? failures : 6)) * 1000;
    return ms < POOL_BACKOFF_MAX_MS ? ms : POOL_BACKOFF_MAX_MS;
}
