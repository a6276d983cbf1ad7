/*
 * A fixed-bucket histogram in the shape Prometheus exports: cumulative
 * counts per upper bound, a sum and a count. Buckets are chosen once at
 * init; observing finds the bucket by binary search and never allocates,
 * so it is cheap enough for the scheduler's loop and the submit path.
 * Plain data: the owner locks it.
 */
#ifndef TIDE_HISTOGRAM_H
#define TIDE_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_MAX_BUCKETS 24

struct histogram {
    int nbounds;
    double bounds[HISTOGRAM_MAX_BUCKETS];       /* upper bounds, strictly increasing */
    uint64_t counts[HISTOGRAM_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last: above all */
    uint64_t count;
    double sum;
};

/* Sets the upper bounds (copied; +Inf is implied). Returns 0, or -1 when
 * n is not 1..HISTOGRAM_MAX_BUCKETS or the bounds do not strictly increase. */
int histogram_init(struct histogram *h, const double *bounds, int n);

/* Counts value in the first bucket whose bound is >= value (Prometheus'
 * `le`). NaN is ignored. */
void histogram_observe(struct histogram *h, double value);

/* Observations <= bounds[i] (cumulative), for i in 0..nbounds; i == nbounds
 * is every observation (+Inf). */
uint64_t histogram_cumulative(const struct histogram *h, int i);

#endif
