/*
 * Sorting the pending jobs pass after pass without sorting them from
 * scratch: the order of the last pass is remembered (ids and positions in
 * the cluster's job array), and a new pass whose jobs kept their relative
 * order under the comparator (most of them, most passes: FIFO never
 * changes it, LAS and SJF only for a requeued job) takes them in that
 * order after one check, sorts only the jobs it did not see last time and
 * merges the two. When the check fails, or memory is short, it sorts
 * everything: the result is always what one full sort would give.
 */
#ifndef TIDE_ORDER_KEEP_H
#define TIDE_ORDER_KEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"

struct order_keep {
    int64_t *ids;    /* the last sort's jobs, in order */
    uint32_t *slots; /* where each was in c->jobs then */
    size_t n, cap;
    uint32_t *mark; /* per position in c->jobs: epoch when a candidate now */
    size_t mark_cap;
    uint32_t epoch;
    struct job **scratch;
    size_t scratch_cap;
};

void order_keep_init(struct order_keep *k);
void order_keep_release(struct order_keep *k);

/* Sorts jobs[0..n) (pointers into c->jobs, no job twice) by cmp, a total
 * order (no two jobs compare equal) called with ctx, and remembers the
 * result for the next call. The same permutation as qsort_r with cmp;
 * cheaper when the jobs left over from the last call are still in order
 * among themselves. c is only read (its id index may be rebuilt). */
void order_keep_sort(struct order_keep *k, struct cluster *c, struct job **jobs, size_t n,
                     int (*cmp)(const void *, const void *, void *), void *ctx);

/* Remembers jobs[0..n) (pointers into c->jobs) after the remembered order,
 * for an owner that knows they sort after it and in this order among
 * themselves. Out of memory, it forgets the order instead. */
void order_keep_append(struct order_keep *k, const struct cluster *c, struct job *const *jobs,
                       size_t n);

/* Writes the remembered order into jobs (room for k->n) as pointers into
 * c->jobs by the remembered positions; false when a job is no longer where
 * it was (jobs left the array since). */
bool order_keep_jobs(const struct order_keep *k, struct cluster *c, struct job **jobs);

/* Forgets the remembered order (the next sort is a full one). */
void order_keep_forget(struct order_keep *k);

#endif
