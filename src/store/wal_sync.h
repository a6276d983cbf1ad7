/*
 * Group sync of a SQLite WAL file. The store's writer connection runs at
 * synchronous=NORMAL, so a commit writes its frames to the WAL and returns
 * without waiting for the disk; wal_sync_flush then makes every WAL write
 * made so far durable with one fdatasync of the WAL, shared by the threads
 * that ask at the same time: one that asks while another's sync is under
 * way waits for it, and for one more only if a write came after that one
 * began. A server that answers only after the flush keeps the promise of
 * synchronous=FULL (nothing acknowledged is lost when the machine stops)
 * while its lock is no longer held across the disk's flush and concurrent
 * requests share one.
 * Writes are counted by the VFS as they reach the file (db_sqlite_vfs.c),
 * before SQLite publishes a commit to the other connections, so whatever a
 * reader could have seen is covered by the next flush. The count is the
 * process's, all WAL files together: a flush of one store may follow
 * another's writes for nothing, never miss its own.
 * A failed fdatasync is final: Linux may drop the pages it could not write
 * and report the next sync as a success, so every later flush fails too.
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

/* Bytes went to a WAL file (the VFS, after each write). Thread-safe. */
void wal_sync_note_write(void);

/* Returns once every WAL write counted before the call is on disk: 0, or
 * TIDE_EIO with err when the WAL cannot be opened or synced, now or ever
 * before (what was committed may then be lost with the machine).
 * Thread-safe; never call it while holding a lock that a committer needs
 * longer than a disk flush. */
int wal_sync_flush(struct wal_sync *w, struct tide_err *err);

/* A write to the WAL failed where the file may now hold a commit that
 * recovery would stop at (its frames' headers not written): every later
 * flush fails, as after a failed fdatasync, since what is written after it
 * may not be found again. errnum: the errno to report. Thread-safe. */
void wal_sync_fail(struct wal_sync *w, int errnum);

/* fdatasync calls made so far (for /metrics and tests). */
uint64_t wal_sync_count(const struct wal_sync *w);

#endif
