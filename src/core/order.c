/* The built-in ordering policies. */
#include "core/order.h"

#include <string.h>

#include "core/core_banned.h"

int order_fifo_compare(const struct job *a, const struct job *b)
{
    if (a->submit_ms != b->submit_ms)
        return a->submit_ms < b->submit_ms ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static int by_priority(const struct job *a, const struct job *b)
{
    if (a->effective_priority != b->effective_priority)
        return a->effective_priority > b->effective_priority ? -1 : 1;
    /* Among borrowers, the project that used least per weight goes first. */
    if (a->share_key != b->share_key)
        return a->share_key < b->share_key ? -1 : 1;
    return order_fifo_compare(a, b);
}

static int by_est_runtime(const struct job *a, const struct job *b)
{
    /* Unknown runtimes sort after every known one. */
    int64_t x = a->est_runtime_s > 0 ? a->est_runtime_s : INT64_MAX;
    int64_t y = b->est_runtime_s > 0 ? b->est_runtime_s : INT64_MAX;
    if (x != y)
        return x < y ? -1 : 1;
    return order_fifo_compare(a, b);
}

/* Discretised LAS (Tiresias' 2D-LAS on GPU time): jobs fall into service
 * bands by attained GPU time, least first; FIFO within a band, which keeps
 * a long job from being starved by a stream of slightly younger ones. */
static int las_band(int64_t attained_gpu_ms)
{
    static const int64_t thresholds_ms[] = {3600LL * 1000, 10 * 3600LL * 1000, 100 * 3600LL * 1000};
    int band = 0;
    while (band < 3 && attained_gpu_ms >= thresholds_ms[band])
        band++;
    return band;
}

static int by_attained_service(const struct job *a, const struct job *b)
{
    int x = las_band(a->attained_gpu_ms), y = las_band(b->attained_gpu_ms);
    if (x != y)
        return x < y ? -1 : 1;
    return order_fifo_compare(a, b);
}

const struct order_ops order_fifo = {"fifo", order_fifo_compare, false};
const struct order_ops order_priority = {"priority", by_priority, false};
const struct order_ops order_sjf = {"sjf", by_est_runtime, false};
const struct order_ops order_las = {"las", by_attained_service, false};
const struct order_ops order_fifo_strict = {"fifo_strict", order_fifo_compare, true};
const struct order_ops order_sjf_strict = {"sjf_strict", by_est_runtime, true};

static const struct order_ops *const policies[] = {&order_fifo,        &order_priority,
                                                   &order_sjf,         &order_las,
                                                   &order_fifo_strict, &order_sjf_strict};

const struct order_ops *order_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
        if (!strcmp(policies[i]->name, name))
            return policies[i];
    return NULL;
}

const char *order_names(void)
{
    return "fifo, priority, sjf, las, fifo_strict, sjf_strict";
}
