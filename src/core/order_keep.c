/* Sorting pending jobs with the help of the last pass's order (see order_keep.h). */
#include "core/order_keep.h"

#include <stdlib.h>
#include <string.h>

#include "core/core_banned.h"

void order_keep_init(struct order_keep *k)
{
    memset(k, 0, sizeof *k);
}

void order_keep_release(struct order_keep *k)
{
    if (!k)
        return;
    free(k->ids);
    free(k->slots);
    free(k->mark);
    free(k->scratch);
    memset(k, 0, sizeof *k);
}

void order_keep_forget(struct order_keep *k)
{
    k->n = 0;
}

/* Room for n remembered jobs, keeping the first k->n. */
static bool reserve(struct order_keep *k, size_t n)
{
    if (n > k->cap) {
        size_t cap = k->cap ? k->cap : 64;
        while (cap < n)
            cap *= 2;
        int64_t *ids = realloc(k->ids, cap * sizeof *ids);
        if (ids)
            k->ids = ids;
        uint32_t *slots = realloc(k->slots, cap * sizeof *slots);
        if (slots)
            k->slots = slots;
        if (!ids || !slots)
            return false;
        k->cap = cap;
    }
    return true;
}

static void remember(struct order_keep *k, const struct cluster *c, struct job *const *jobs,
                     size_t n)
{
    k->n = 0;
    if (!reserve(k, n))
        return; /* nothing remembered: the next sort is a full one */
    for (size_t i = 0; i < n; i++) {
        k->ids[i] = jobs[i]->id;
        k->slots[i] = (uint32_t)(jobs[i] - c->jobs);
    }
    k->n = n;
}

void order_keep_append(struct order_keep *k, const struct cluster *c, struct job *const *jobs,
                       size_t n)
{
    if (!reserve(k, k->n + n)) {
        k->n = 0;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        k->ids[k->n + i] = jobs[i]->id;
        k->slots[k->n + i] = (uint32_t)(jobs[i] - c->jobs);
    }
    k->n += n;
}

bool order_keep_jobs(const struct order_keep *k, struct cluster *c, struct job **jobs)
{
    for (size_t i = 0; i < k->n; i++) {
        uint32_t slot = k->slots[i];
        if (slot >= c->njobs || c->jobs[slot].id != k->ids[i])
            return false;
        jobs[i] = &c->jobs[slot];
    }
    return true;
}

static void sort_all(struct order_keep *k, const struct cluster *c, struct job **jobs, size_t n,
                     int (*cmp)(const void *, const void *, void *), void *ctx)
{
    if (n > 1)
        qsort_r(jobs, n, sizeof *jobs, cmp, ctx);
    remember(k, c, jobs, n);
}

/* Room for n jobs of scratch and a mark per job slot, and a fresh epoch
 * that no mark holds yet. */
static bool prepare(struct order_keep *k, const struct cluster *c, size_t n)
{
    if (c->njobs > UINT32_MAX)
        return false;
    if (n > k->scratch_cap) {
        struct job **s = realloc(k->scratch, n * sizeof *s);
        if (!s)
            return false;
        k->scratch = s;
        k->scratch_cap = n;
    }
    if (c->njobs > k->mark_cap) {
        size_t cap = k->mark_cap ? k->mark_cap : 64;
        while (cap < c->njobs)
            cap *= 2;
        uint32_t *m = realloc(k->mark, cap * sizeof *m);
        if (!m)
            return false;
        memset(m + k->mark_cap, 0, (cap - k->mark_cap) * sizeof *m);
        k->mark = m;
        k->mark_cap = cap;
    }
    if (k->epoch >= UINT32_MAX - 3) {
        memset(k->mark, 0, k->mark_cap * sizeof *k->mark);
        k->epoch = 0;
    }
    k->epoch += 2; /* epoch: a candidate now; epoch + 1: taken in the old order */
    return true;
}

void order_keep_sort(struct order_keep *k, struct cluster *c, struct job **jobs, size_t n,
                     int (*cmp)(const void *, const void *, void *), void *ctx)
{
    if (n < 2 || !k->n || !prepare(k, c, n)) {
        sort_all(k, c, jobs, n, cmp, ctx);
        return;
    }
    const uint32_t now = k->epoch, taken = now + 1;
    for (size_t i = 0; i < n; i++) {
        if (jobs[i] < c->jobs || jobs[i] >= c->jobs + c->njobs) {
            sort_all(k, c, jobs, n, cmp, ctx);
            return;
        }
        k->mark[jobs[i] - c->jobs] = now;
    }
    /* The candidates the last sort saw, in its order, checked as they come. */
    struct job **kept = k->scratch;
    size_t m = 0;
    for (size_t i = 0; i < k->n; i++) {
        uint32_t slot = k->slots[i];
        struct job *job = slot < c->njobs && c->jobs[slot].id == k->ids[i]
                              ? &c->jobs[slot]
                              : cluster_find_job(c, k->ids[i]); /* moved since */
        if (!job || k->mark[job - c->jobs] != now)
            continue; /* gone, or not a candidate this time */
        k->mark[job - c->jobs] = taken;
        if (m && cmp(&kept[m - 1], &job, ctx) >= 0) {
            sort_all(k, c, jobs, n, cmp, ctx); /* the order changed */
            return;
        }
        kept[m++] = job;
    }
    /* The rest are new since then: sorted on their own, then merged. */
    struct job **fresh = kept + m;
    size_t nfresh = 0;
    for (size_t i = 0; i < n; i++)
        if (k->mark[jobs[i] - c->jobs] == now)
            fresh[nfresh++] = jobs[i];
    if (m + nfresh != n) { /* a job given twice */
        sort_all(k, c, jobs, n, cmp, ctx);
        return;
    }
    if (nfresh > 1)
        qsort_r(fresh, nfresh, sizeof *fresh, cmp, ctx);
    size_t a = 0, b = 0, out = 0;
    while (a < m && b < nfresh) {
        int d = cmp(&kept[a], &fresh[b], ctx);
        if (d == 0) { /* not a total order: leave it to qsort_r */
            memcpy(jobs, k->scratch, n * sizeof *jobs);
            sort_all(k, c, jobs, n, cmp, ctx);
            return;
        }
        jobs[out++] = d < 0 ? kept[a++] : fresh[b++];
    }
    while (a < m)
        jobs[out++] = kept[a++];
    while (b < nfresh)
        jobs[out++] = fresh[b++];
    remember(k, c, jobs, n);
}
