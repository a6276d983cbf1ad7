/*
 * The pool loop's private state, shared by its files: pool_loop.c (the
 * thread and its decisions), pool_budget.c (budget alerts), pool_spot.c
 * (spot interruptions) and pool_api.c (GET /v1/pools, node fields,
 * /metrics). Not for other modules: they use pool_loop.h.
 */
#ifndef TIDE_SERVER_POOL_LOOP_STATE_H
#define TIDE_SERVER_POOL_LOOP_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/autoscaler.h"
#include "core/billing.h"
#include "providers/provider.h"
#include "server/server.h"

#define POOL_TICK_MS 1000
#define POOL_MAX_BATCH 64
#define POOL_LIST_MAX 256
/* How often a pool's provider is asked what it holds, unless the pool
 * says (list_interval_s): spot pools for their interruptions, the others
 * for what a create that failed part way, or a delete cut short by a
 * server stop, left behind (deleted as orphans). */
#define POOL_LIST_EVERY_MS 15000
#define POOL_LIST_OTHERS_EVERY_MS 300000
#define POOL_MAX_IN_FLIGHT 8     /* blocking provider calls running at once, all pools */
/* A released node the provider still lists this long after it took the
 * delete is not deleted again (clouds list a VM for minutes while it
 * goes); past it, it is an orphan as any. */
#define POOL_DELETE_SETTLE_MS (30 * 60 * 1000)

struct pool_node_rt {
    int64_t node_id;
    int pool;
    char name[TIDE_NAME_MAX];
    char provider_id[PROVIDER_ID_MAX];
    bool destroy_pending;
    bool call_in_flight; /* a create or delete of it is queued or running */
    int64_t deleted_ms;  /* when the provider last took its delete; 0: never */
    int destroy_failures;
    int64_t destroy_not_before_ms;
};

enum pool_call_kind { CALL_CREATE, CALL_DELETE, CALL_LIST };
#define POOL_CALL_KINDS 3
#define POOL_DECISION_KINDS (POOL_UNDRAIN + 1) /* enum pool_action_type */

/* A provider call: prepared under the lock, made without it (on a worker
 * thread of its own when the provider is blocking), its result recorded
 * under the lock once done. On the heap, as a worker holds a pointer. */
struct pool_call {
    struct pool_loop *pl;
    pthread_t thread;
    bool started; /* on a worker thread, joined when done */
    atomic_int done; /* set by whoever made the call, after rc and error */
    enum pool_call_kind kind;
    int pool;
    int count; /* create: nodes[] and node_ids[]; delete: nodes[0], node_ids[0] (0: an orphan) */
    struct provider_node nodes[POOL_MAX_BATCH];
    int64_t node_ids[POOL_MAX_BATCH];
    struct provider_node *listed; /* list: POOL_LIST_MAX of them, rc how many */
    int rc;
    char error[400];
};

struct pool_loop {
    struct server *srv;
    pthread_t thread;
    bool started;
    struct autoscaler as;
    struct billing bill;
    struct provider providers[TIDE_MAX_POOLS];
    struct pool_node_rt *nodes;
    size_t nnodes, nodes_cap;
    struct pool_action_list actions;
    struct pool_call **calls; /* queued, running and done, oldest first */
    size_t ncalls, calls_cap;
    int in_flight, pool_in_flight[TIDE_MAX_POOLS]; /* started and not yet joined */
    int create_failures[TIDE_MAX_POOLS]; /* in a row */
    long long scale_ups[TIDE_MAX_POOLS], scale_downs[TIDE_MAX_POOLS];
    long long provider_failures[TIDE_MAX_POOLS], nodes_failed[TIDE_MAX_POOLS];
    long long interruptions[TIDE_MAX_POOLS];
    /* For /metrics: provider calls done and failed by kind, decisions by type. */
    long long provider_calls[TIDE_MAX_POOLS][POOL_CALL_KINDS];
    long long provider_call_failures[TIDE_MAX_POOLS][POOL_CALL_KINDS];
    long long decisions[TIDE_MAX_POOLS][POOL_DECISION_KINDS];
    int64_t last_list_ms[TIDE_MAX_POOLS]; /* each pool's last list */
    /* This tick's budget alerts, stored with its transaction (pool_budget.c). */
    struct budget_alert *budget_alerts; /* BUDGET_TICK_ALERTS_MAX; NULL until needed */
    int nbudget_alerts;
};

/* Budget alerts (pool_budget.c), under the lock. The tick meters the
 * budgets, stops running jobs over a stop_running cap and keeps the
 * thresholds crossed in pl (0 or TIDE_ENOMEM). Each is an event written in
 * the transaction that saves the budgets' state (alerts_store); once it
 * commits, a log line, the project's alert hook and, at 100 %, a scheduling
 * pass (alerts_saved); if it rolls back, the next tick reports them again
 * (alerts_unsaved). */
int pool_budgets_tick(struct server *srv, struct pool_loop *pl, int64_t now);
int pool_budgets_alerts_store(struct server *srv, struct pool_loop *pl, int64_t now,
                              struct tide_err *err);
void pool_budgets_alerts_saved(struct server *srv, struct pool_loop *pl);
void pool_budgets_alerts_unsaved(struct server *srv, struct pool_loop *pl);

/* Under the lock: nodes of spot pools take only preemptible work
 * (queue_allows_node; pool_spot.c). */
void pool_mark_spot_nodes(struct server *srv);

/* Writes micros as a decimal amount with six places ("4.200000", "-0.500000";
 * pool_api.c). */
void pool_money(char *buf, size_t size, int64_t micros);

#endif
