/*
 * Leadership for high availability (docs/ha.md). Several servers may share
 * one PostgreSQL store; exactly one leads. The leader is whoever holds the
 * store's leader lock on the connection it writes with, so a server that has
 * lost that connection can no longer write; each takeover bumps an epoch,
 * which the leader hands to agents so they can ignore a deposed leader.
 *
 * SQLite has one server per data directory (data_lock.h): store_try_lead
 * always grants, still bumping the epoch, so every restart is a new epoch.
 */
#ifndef TIDE_STORE_LEAD_H
#define TIDE_STORE_LEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/tide_err.h"
#include "store/store.h"

#define STORE_LEADER_URL_MAX 256

struct store_leader {
    int64_t epoch;                  /* 0: nobody has ever led */
    char url[STORE_LEADER_URL_MAX]; /* the leader's advertised API URL */
    int64_t since_ms;
};

/* Nothing left to do: the schema's migrations make the leader table
 * (store_schema.c). Kept for callers. */
int store_lead_init(struct store *s, struct tide_err *err);

/* Tries to become the leader, advertising url. Returns 1 with *epoch the
 * new epoch when granted, 0 when another server leads, <0 on error. A
 * follower whose connection was lost is reconnected first; a leader's never. */
int store_try_lead(struct store *s, const char *url, int64_t now_ms, int64_t *epoch,
                   struct tide_err *err);

/* Who leads (or last led): 0 with *out filled, TIDE_ENOENT when nobody has. */
int store_leader_get(struct store *s, struct store_leader *out, struct tide_err *err);

/* True once the store's write connection (and with it the leader lock) has
 * been lost: a leader must stop acting at once. Always false for SQLite. */
bool store_lead_lost(struct store *s);

#endif
