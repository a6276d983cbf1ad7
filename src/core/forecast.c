/* Seasonal demand profile with exponential smoothing (see forecast.h). */
#include "core/forecast.h"

#include <string.h>

#include "core/core_banned.h"

#define HOUR_MS (3600LL * 1000)

void forecast_init(struct forecast *f, double alpha)
{
    memset(f, 0, sizeof *f);
    f->alpha = alpha > 0 && alpha <= 1 ? alpha : 0.5;
    f->bucket_hour = -1;
}

int forecast_bucket(int64_t t_ms)
{
    int64_t hour = t_ms / HOUR_MS;
    /* 1970-01-01 was a Thursday: shift so that Monday 00:00 is bucket 0. */
    int64_t b = (hour + 3 * 24) % FORECAST_BUCKETS;
    return (int)(b < 0 ? b + FORECAST_BUCKETS : b);
}

static double bucket_value(const struct forecast *f, int b)
{
    return f->seen[b] ? f->profile[b] : (f->has_level ? f->level : 0);
}

/* Folds the finished hour into the profile and scores its prediction. */
static void close_bucket(struct forecast *f)
{
    int b = forecast_bucket(f->bucket_hour * HOUR_MS);
    double predicted = bucket_value(f, b);
    double observed = f->bucket_peak;
    if (f->seen[b] || f->has_level) {
        double e = predicted - observed;
        f->abs_error_sum += e < 0 ? -e : e;
        f->closed_buckets++;
    }
    f->profile[b] = f->seen[b] ? f->alpha * observed + (1 - f->alpha) * f->profile[b] : observed;
    f->seen[b] = true;
    f->level = f->has_level ? f->alpha * observed + (1 - f->alpha) * f->level : observed;
    f->has_level = true;
}

void forecast_observe(struct forecast *f, int64_t now_ms, double gpus_wanted)
{
    int64_t hour = now_ms / HOUR_MS;
    if (f->bucket_hour >= 0 && hour != f->bucket_hour) {
        close_bucket(f);
        /* Hours with no observation at all (nothing ran the loop) count as 0. */
        for (int64_t h = f->bucket_hour + 1; h < hour && h < f->bucket_hour + FORECAST_BUCKETS; h++) {
            f->bucket_hour = h;
            f->bucket_peak = 0;
            close_bucket(f);
        }
    }
    if (hour != f->bucket_hour) {
        f->bucket_hour = hour;
        f->bucket_peak = 0;
    }
    if (gpus_wanted > f->bucket_peak)
        f->bucket_peak = gpus_wanted;
}

double forecast_predict(const struct forecast *f, int64_t t_ms)
{
    return bucket_value(f, forecast_bucket(t_ms));
}

double forecast_error(const struct forecast *f)
{
    return f->closed_buckets ? f->abs_error_sum / (double)f->closed_buckets : 0;
}
