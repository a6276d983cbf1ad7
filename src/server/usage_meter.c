/* The server's usage ledger and the metering of nodes joined by hand (see
 * usage_meter.h). */
#include "server/usage_meter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "store/store_usage.h"

int usage_meter_start(struct server *srv, struct tide_err *err)
{
    struct usage_meter *m = calloc(1, sizeof *m);
    if (!m)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    usage_ledger_init(&m->ledger);
    m->npools = srv->cfg.npools;
    memcpy(m->pools, srv->cfg.pools, (size_t)m->npools * sizeof *m->pools);
    m->static_pool = m->npools++;
    struct pool *st = &m->pools[m->static_pool];
    memset(st, 0, sizeof *st);
    snprintf(st->name, sizeof st->name, "%s", USAGE_METER_STATIC_POOL);
    st->gpus_per_node = 1; /* node-ms of the pseudo-pool are GPU-ms */
    st->billing = BILLING_ON_DEMAND;
    int rc = store_usage_load(srv->store, &m->ledger, m->pools, m->npools, err);
    if (rc) {
        usage_ledger_release(&m->ledger);
        free(m);
        return rc;
    }
    m->last_ms = m->last_save_ms = clock_now_ms();
    srv->usage = m;
    return 0;
}

int usage_meter_save(struct server *srv, struct tide_err *err)
{
    struct usage_meter *m = srv->usage;
    return m ? store_usage_save(srv->store, &m->ledger, m->pools, m->npools, err) : 0;
}

void usage_meter_saved(struct server *srv, int64_t now_ms)
{
    struct usage_meter *m = srv->usage;
    if (!m)
        return;
    usage_ledger_clean(&m->ledger);
    m->last_save_ms = now_ms;
}

/* Meters up to now_ms; saves when due (or when forced). */
static void meter(struct server *srv, int64_t now_ms, bool force_save)
{
    struct usage_meter *m = srv->usage;
    if (now_ms > m->last_ms &&
        usage_meter_static(&m->ledger, &srv->cluster, m->static_pool, m->last_ms, now_ms) != 0)
        log_error("metering nodes joined by hand: out of memory");
    if (now_ms > m->last_ms)
        m->last_ms = now_ms;
    if (!force_save && now_ms - m->last_save_ms < USAGE_METER_SAVE_MS)
        return;
    struct tide_err err;
    tide_err_clear(&err);
    int rc = store_begin(srv->store, &err);
    if (!rc)
        rc = usage_meter_save(srv, &err);
    if (!rc)
        rc = store_commit(srv->store, &err);
    if (rc) {
        store_rollback(srv->store);
        log_error("usage not saved (kept for the next try): %s", err.message);
        return;
    }
    usage_meter_saved(srv, now_ms);
}

void usage_meter_tick(struct server *srv, int64_t now_ms)
{
    if (srv->usage && now_ms - srv->usage->last_ms >= 1000)
        meter(srv, now_ms, false);
}

void usage_meter_stop(struct server *srv)
{
    struct usage_meter *m = srv->usage;
    if (!m)
        return;
    pthread_mutex_lock(&srv->lock);
    meter(srv, clock_now_ms(), true);
    pthread_mutex_unlock(&srv->lock);
    usage_ledger_release(&m->ledger);
    free(m);
    srv->usage = NULL;
}
