/*
 * Group sync of a SQLite WAL file. The store's writer connection runs at
 * synchronous=NORMAL, so a commit writes its frames to the WAL and returns
 * without waiting for the disk; wal_sync_flush then makes every commit made
 * so far durable with one fdatasync of the WAL, shared by the threads that
 * ask at the same time: one that asks while another's sync is under way
 * waits for it, and for one more only if its commit came after that one
 * began. A server that answers only after the flush keeps the promise of
 * synchronous=FULL (nothing acknowledged is lost when the machine stops)
 * while its lock is no longer held across the disk's flush and concurrent
 * requests share one.
 */
#ifndef TIDE_STORE_WAL_SYNC_H
#define TIDE_STORE_WAL_SYNC_H

#include <stdint.h>

#include "common/tide_err.h"

struct wal_sync;

/* For the database at db_path (its WAL is db_path-wal, opened at the first
 * flush). NULL when out of memory. */
struct wal_sync *wal_sync_new(const char *db_path);
void wal_sync_free(struct wal_sync *w);

/* A commit's frames are in the WAL file (not yet on disk). Thread-safe. */
void wal_sync_committed(struct wal_sync *w);

/* Returns once every commit counted before the call is on disk: 0, or
 * TIDE_EIO with err when the WAL cannot be opened or synced (what was
 * committed may then be lost with the machine). Thread-safe; never call it
 * while holding a lock that a committer needs longer than a disk flush. */
int wal_sync_flush(struct wal_sync *w, struct tide_err *err);

/* fdatasync calls made so far (for /metrics and tests). */
uint64_t wal_sync_count(const struct wal_sync *w);

#endif
