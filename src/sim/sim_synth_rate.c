/*
 * The default arrival rate of a synthetic trace (tide sim --synthetic
 * without --arrival-rate): enough jobs per hour to ask for 70% of the
 * cluster's GPU-hours. An elastic pool counts at max_nodes, the most it
 * can hold; its nodes field is unused and 0.
 */
#include <math.h>

#include "sim/sim.h"

double sim_synth_default_rate(const struct sim_config *cfg, const struct trace_synth_params *p)
{
    /* GPUs per job: the mix's weighted mean. Hours per job: the mean of the
     * log-uniform durations, (b - a) / ln(b / a). */
    double gpus = 0, weight = 0, cluster_gpus = 0;
    for (int i = 0; i < p->nmix; i++) {
        gpus += (double)p->mix_gpus[i] * p->mix_weight[i];
        weight += p->mix_weight[i];
    }
    for (int k = 0; k < cfg->npools; k++) {
        const struct sim_pool *sp = &cfg->pools[k];
        int nodes = sp->elastic ? sp->core.max_nodes : sp->nodes;
        cluster_gpus += (double)nodes * sp->gpus_per_node;
    }
    double a = (double)p->min_duration_s, b = (double)p->max_duration_s;
    double mean_s = b > a ? (b - a) / log(b / a) : a;
    double rate = gpus > 0 && weight > 0 && mean_s > 0
                      ? 0.7 * cluster_gpus * 3600.0 / (gpus / weight * mean_s)
                      : 0;
    /* No GPUs to load (none in the cluster or in the mix): one a minute. */
    return rate > 0 ? rate : 60;
}
