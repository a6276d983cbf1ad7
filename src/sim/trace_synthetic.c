/*
 * Seeded synthetic traces: Poisson arrivals at a given rate, durations
 * log-uniform between two bounds, GPU counts from a weighted mix. The
 * generator is splitmix64, so a seed names one trace on every machine
 * (durations use only integer arithmetic and exp/log on doubles, which are
 * correctly rounded enough for the same libm to agree with itself).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_rand.h"
#include "sim/trace.h"

void trace_synth_defaults(struct trace_synth_params *p)
{
    memset(p, 0, sizeof *p);
    p->njobs = 1000;
    p->seed = 1;
    p->arrivals_per_hour = 0; /* 0: the caller picks one for its cluster */
    p->min_duration_s = 60;
    p->max_duration_s = 24 * 3600;
    static const int gpus[] = {1, 2, 4, 8}, weight[] = {70, 10, 10, 10};
    p->nmix = 4;
    for (int i = 0; i < 4; i++)
        p->mix_gpus[i] = gpus[i], p->mix_weight[i] = weight[i];
    p->nprojects = 4;
}

int trace_synth_parse_mix(struct trace_synth_params *p, const char *mix, struct tide_err *err)
{
    int n = 0;
    const char *s = mix;
    while (*s) {
        int g, w, used = 0;
        if (n == 16)
            return tide_err_set(err, TIDE_EINVAL, "--size-mix", "at most 16 sizes in '%s'", mix);
        if (sscanf(s, "%d:%d%n", &g, &w, &used) != 2 || g < 0 || g > 1000000 || w <= 0 ||
            (s[used] != ',' && s[used] != '\0'))
            return tide_err_set(err, TIDE_EINVAL, "--size-mix",
                                "'%s' is not GPUS:WEIGHT[,GPUS:WEIGHT...] with GPUS >= 0 and "
                                "WEIGHT > 0, e.g. 1:70,2:10,4:10,8:10",
                                mix);
        p->mix_gpus[n] = g;
        p->mix_weight[n] = w;
        n++;
        s += used;
        if (*s == ',')
            s++;
    }
    if (n == 0)
        return tide_err_set(err, TIDE_EINVAL, "--size-mix", "the size mix is empty");
    p->nmix = n;
    return 0;
}

double trace_synth_min_rate(const struct trace_synth_params *p)
{
    return p->njobs > 1 ? (double)(p->njobs - 1) / (TRACE_MAX_TIME_MS / 3600000.0) : 0;
}

int trace_synth_generate(struct trace *t, const struct trace_synth_params *p)
{
    uint64_t state = p->seed;
    long total_weight = 0;
    for (int i = 0; i < p->nmix; i++)
        total_weight += p->mix_weight[i];
    double mean_gap_ms = p->arrivals_per_hour > 0 ? 3600000.0 / p->arrivals_per_hour : 60000.0;
    double lo = log((double)(p->min_duration_s > 0 ? p->min_duration_s : 1));
    double hi = log((double)(p->max_duration_s > p->min_duration_s ? p->max_duration_s
                                                                   : p->min_duration_s + 1));
    double clock_ms = 0;
    for (long i = 0; i < p->njobs; i++) {
        struct trace_job job = {0};
        if (i > 0)
            clock_ms += -log(sim_unit(&state)) * mean_gap_ms;
        if (!(clock_ms <= (double)TRACE_MAX_TIME_MS))
            return TIDE_ETOOBIG; /* past the traces' bound, and before converting a huge double */
        job.submit_ms = (int64_t)clock_ms;
        job.duration_ms = (int64_t)(exp(lo + (hi - lo) * sim_unit(&state)) * 1000.0);
        if (job.duration_ms < 1000)
            job.duration_ms = 1000;
        long pick = (long)(sim_splitmix64(&state) % (uint64_t)total_weight);
        int k = 0;
        while (pick >= p->mix_weight[k])
            pick -= p->mix_weight[k++];
        job.gpus = p->mix_gpus[k];
        int project = p->nprojects > 0 ? (int)(sim_splitmix64(&state) % (uint64_t)p->nprojects) : 0;
        snprintf(job.project, sizeof job.project, "project-%d", project);
        snprintf(job.queue, sizeof job.queue, "default");
        if (trace_push(t, &job) != 0)
            return TIDE_ENOMEM;
    }
    t->rows_read = p->njobs;
    return 0;
}
