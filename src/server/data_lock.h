/*
 * One server per data directory: an exclusive lock on DIR/server.lock,
 * held for the server's life, with the holder's pid written inside so a
 * second server can say who has it. The kernel drops the lock when the
 * process dies, so a kill -9 leaves nothing to clean up.
 */
#ifndef TIDE_DATA_LOCK_H
#define TIDE_DATA_LOCK_H

#include "common/tide_err.h"

/* Takes the lock on dir (which must exist). Returns 0 with *fd_out the open
 * lock file (keep it open; close to release), or TIDE_ECONFLICT naming the pid
 * that holds it, or TIDE_EIO. */
int data_lock_acquire(const char *dir, int *fd_out, struct tide_err *err);

#endif
