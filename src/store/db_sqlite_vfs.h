/*
 * The VFS the store opens SQLite files with (db_sqlite.c): SQLite's
 * "unix-excl" (the process holds the file alone, its connections lock in
 * memory, the WAL index is in the heap) with the writes to a WAL file
 * gathered. SQLite writes each WAL frame as two pwrite calls (its 24-byte
 * header, then the page); here the consecutive writes of a transaction are
 * kept in a buffer and reach the file in one call once the commit's last
 * frame is written (its header says so), or when SQLite syncs the WAL,
 * reads or sizes that part of it, writes elsewhere, truncates or closes it,
 * or the buffer is full (and what a commit leaves, from its WAL hook); a
 * write over bytes already written (the checksums SQLite rewrites as a
 * commit that spilled pages early ends) goes through at once. So a
 * commit's frames are in the file before SQLite publishes them to the other
 * connections (in its WAL index, after the frames), at any synchronous
 * setting, and before any sync of the WAL. Each write that reaches a WAL
 * file is counted (wal_sync_note_write) before that publication, so a
 * flush that follows whatever a reader saw covers it.
 * Database and journal files other than the WAL pass through untouched.
 */
#ifndef TIDE_STORE_DB_SQLITE_VFS_H
#define TIDE_STORE_DB_SQLITE_VFS_H

#include "common/tide_err.h"

struct sqlite3_file;

/* The VFS's name, registered at the first call (thread-safe); NULL with err
 * when SQLite has no "unix-excl" or registering failed. */
const char *db_sqlite_vfs(struct tide_err *err);

/* Writes what is gathered for file when it is a WAL file of this VFS (a
 * commit may end with rewritten frame headers and no page after them);
 * SQLITE_OK or SQLite's error. Call with the connection's write done, from
 * its own thread (its WAL hook). */
int db_sqlite_vfs_flush_wal(struct sqlite3_file *file);

#endif
