/*
 * Durable state of elastic pools, beside store.h's tables: which pool each
 * pool node belongs to with its lifetime, provider id and spot deadline,
 * the billing meters (node-ms and GPU-ms per pool and project) and what
 * budgets have spent. Called under the
 * server's lock, inside the caller's transaction where it has one.
 */
#ifndef TIDE_STORE_POOLS_H
#define TIDE_STORE_POOLS_H

#include "core/billing.h"
#include "core/budget.h"
#include "core/pool.h"
#include "store/store.h"

/* Inserts or updates node's pool row (pool, created/ready/ended times) and
 * its provider id (NULL: keep). */
int store_pool_node_put(struct store *s, const struct node *node, const char *provider_id,
                        struct tide_err *err);

/* Copies pool, times of every stored pool node into the nodes of c; calls
 * fn with each node's provider id (may be NULL). */
int store_pool_nodes_load(struct store *s, struct cluster *c,
                          void (*fn)(int64_t node_id, const char *provider_id, void *ctx),
                          void *ctx, struct tide_err *err);

/* Saves / loads the meters of b for pools (by name). */
int store_pool_meters_save(struct store *s, const struct billing *b, const struct pool *pools,
                           int npools, struct tide_err *err);
int store_pool_meters_load(struct store *s, struct billing *b, const struct pool *pools,
                           int npools, struct tide_err *err);

/* Saves / loads what each budget of bs has spent in its current periods
 * and the alerts it has raised (budgets no longer configured are skipped
 * on load; a period that has ended starts again at the next tick). */
int store_budgets_save(struct store *s, const struct budget_set *bs, struct tide_err *err);
int store_budgets_load(struct store *s, struct budget_set *bs, struct tide_err *err);

#endif
