/*
 * Ordering policies: in which order a scheduling pass considers pending
 * jobs. A policy is a comparator over jobs whose effective_priority the
 * pass has already set; ties always fall back to FIFO (submit time, id), so
 * every order is total and deterministic.
 */
#ifndef TIDE_ORDER_H
#define TIDE_ORDER_H

#include "core/cluster.h"

struct order_ops {
    const char *name;
    /* <0 when a goes before b. */
    int (*compare)(const struct job *a, const struct job *b);
    /* Strict: a pass stops at the first job that cannot start now (no job
     * behind it starts, except as EASY backfill allows when backfill is
     * on); otherwise a pass goes on down the queue past blocked jobs. */
    bool strict;
};

extern const struct order_ops order_fifo;     /* submit order only */
extern const struct order_ops order_priority; /* effective priority, then FIFO (default) */
extern const struct order_ops order_sjf;      /* shortest est_runtime first (unknown last) */
extern const struct order_ops order_las;      /* least attained GPU service first (Tiresias-style) */
extern const struct order_ops order_fifo_strict; /* fifo, stopping at the first blocked job */
extern const struct order_ops order_sjf_strict;  /* sjf, stopping at the first blocked job */

/* The policy called name, or NULL. */
const struct order_ops *order_by_name(const char *name);

/* The names of all policies, comma-separated, for error messages. */
const char *order_names(void);

/* FIFO tie-break shared by every policy. */
int order_fifo_compare(const struct job *a, const struct job *b);

#endif
