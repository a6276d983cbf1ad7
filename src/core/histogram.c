/* Fixed-bucket histograms for /metrics (histogram.h). */
#include "core/histogram.h"

#include <math.h>
#include <string.h>

#include "core/core_banned.h"

int histogram_init(struct histogram *h, const double *bounds, int n)
{
    memset(h, 0, sizeof *h);
    if (n < 1 || n > HISTOGRAM_MAX_BUCKETS)
        return -1;
    for (int i = 0; i < n; i++) {
        if (isnan(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
            return -1;
        h->bounds[i] = bounds[i];
    }
    h->nbounds = n;
    return 0;
}

void histogram_observe(struct histogram *h, double value)
{
    if (isnan(value))
        return;
    int lo = 0, hi = h->nbounds; /* the answer is in [lo, hi]; hi: above every bound */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (value <= h->bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    h->counts[lo]++;
    h->count++;
    h->sum += value;
}

uint64_t histogram_cumulative(const struct histogram *h, int i)
{
    if (i >= h->nbounds)
        return h->count;
    uint64_t n = 0;
    for (int k = 0; k <= i; k++)
        n += h->counts[k];
    return n;
}
