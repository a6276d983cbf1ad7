/*
 * The server's usage ledger (core/usage_ledger.h, GET /v1/usage): fed by the
 * pool loop's billing for pool nodes and, here, for nodes joined by hand
 * (usage_meter_static() on every scheduler wake-up, at most once a second),
 * under a pseudo-pool "(static)" after the configured pools, priced 0.
 * Saved to the store with the pool loop's saves and at least every
 * USAGE_METER_SAVE_MS on its own; loaded at start.
 */
#ifndef TIDE_SERVER_USAGE_METER_H
#define TIDE_SERVER_USAGE_METER_H

#include "core/pool.h"
#include "core/usage_ledger.h"
#include "server/server.h"

#define USAGE_METER_STATIC_POOL "(static)"
#define USAGE_METER_SAVE_MS 5000

struct usage_meter {
    struct usage_ledger ledger;
    /* The configured pools, then the static pseudo-pool at static_pool:
     * the pool list every ledger call takes. */
    struct pool pools[TIDE_MAX_POOLS + 1];
    int npools;
    int static_pool;
    int64_t last_ms; /* static nodes metered up to here */
    int64_t last_save_ms;
};

/* Creates srv->usage: tables, the stored ledger. Call after the cluster is
 * loaded and before the pool loop starts. */
int usage_meter_start(struct server *srv, struct tide_err *err);

/* Under the lock: meters static nodes up to now_ms (once a second at most)
 * and saves the ledger when USAGE_METER_SAVE_MS have passed since the last
 * save. Failures are logged; metering goes on. */
void usage_meter_tick(struct server *srv, int64_t now_ms);

/* Under the lock, inside the caller's transaction: writes the ledger's
 * changed rows (the pool loop's save). usage_meter_saved() after the commit. */
int usage_meter_save(struct server *srv, struct tide_err *err);
void usage_meter_saved(struct server *srv, int64_t now_ms);

/* Meters and saves a last time, then frees srv->usage (threads stopped). */
void usage_meter_stop(struct server *srv);

#endif
