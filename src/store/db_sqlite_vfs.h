/*
 * The VFS the store opens SQLite files with (db_sqlite.c): SQLite's
 * "unix-excl" (the process holds the file alone, its connections lock in
 * memory, the WAL index is in the heap) with the writes to a WAL file
 * gathered. SQLite writes each WAL frame as two pwrite calls (its 24-byte
 * header, then the page); here the consecutive writes of a transaction are
 * kept in a buffer and reach the file in one call when SQLite syncs the WAL
 * (each commit at synchronous=FULL), reads or sizes that part of it, writes
 * elsewhere, truncates or closes it, or the buffer is full. Nothing reaches
 * the disk later than before: SQLite's own sync is the point where a write
 * must be there, and the buffer is written just before it.
 *
 * It relies on synchronous=FULL: another connection may read a committed
 * frame only after the commit's sync, so the frames are in the file by then.
 * Database and journal files other than the WAL pass through untouched.
 */
#ifndef TIDE_STORE_DB_SQLITE_VFS_H
#define TIDE_STORE_DB_SQLITE_VFS_H

#include "common/tide_err.h"

/* The VFS's name, registered at the first call (thread-safe); NULL with err
 * when SQLite has no "unix-excl" or registering failed. */
const char *db_sqlite_vfs(struct tide_err *err);

#endif
