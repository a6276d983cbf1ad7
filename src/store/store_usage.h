/*
 * The usage ledger's tables (core/usage_ledger.h) in the store:
 * one row per pool day and one per (day, pool, project, queue). Called
 * under the server's lock, inside the caller's transaction.
 */
#ifndef TIDE_STORE_USAGE_H
#define TIDE_STORE_USAGE_H

#include "core/pool.h"
#include "core/usage_ledger.h"
#include "store/store.h"

/* Writes the rows of l changed since the last save (the caller calls
 * usage_ledger_clean() once the transaction commits). */
int store_usage_save(struct store *s, const struct usage_ledger *l, const struct pool *pools,
                     int npools, struct tide_err *err);

/* Adds the stored rows of configured pools to l, in day order. */
int store_usage_load(struct store *s, struct usage_ledger *l, const struct pool *pools, int npools,
                     struct tide_err *err);

#endif
