/*
 * Demand forecasting for predictive pre-scaling: GPUs wanted per hour of the
 * week (a seasonal profile, hour of day x day of week), each bucket updated
 * by exponential smoothing from its peak demand, with an overall smoothed
 * level for buckets never seen. Pure: time is passed in. The error of each
 * closed bucket's prediction is tracked as a mean absolute error.
 */
#ifndef TIDE_FORECAST_H
#define TIDE_FORECAST_H

#include <stdbool.h>
#include <stdint.h>

#define FORECAST_BUCKETS (7 * 24)

struct forecast {
    double alpha;                      /* smoothing weight of a new observation, 0..1 */
    double profile[FORECAST_BUCKETS];  /* smoothed peak GPUs wanted per hour of the week */
    bool seen[FORECAST_BUCKETS];
    double level;                      /* smoothed peak over all hours */
    bool has_level;
    int64_t bucket_hour;               /* hour (since the epoch) being observed; -1: none */
    double bucket_peak;
    double abs_error_sum;              /* |predicted - observed| over closed buckets */
    int64_t closed_buckets;
};

void forecast_init(struct forecast *f, double alpha);

/* Hour of the week (0 = Monday 00:00 UTC) of a time. */
int forecast_bucket(int64_t t_ms);

/* Records that gpus_wanted GPUs were wanted (running + waiting) at now_ms. */
void forecast_observe(struct forecast *f, int64_t now_ms, double gpus_wanted);

/* GPUs expected to be wanted at t_ms; 0 before anything was observed. */
double forecast_predict(const struct forecast *f, int64_t t_ms);

/* Mean absolute error of past predictions in GPUs; 0 before any. */
double forecast_error(const struct forecast *f);

#endif
