/*
 * Spare directories: empty directories made ahead of need, so that a start
 * renames one into place instead of making it (a job's directory on the
 * agent, its checkpoint directory on the server). On ext4 a mkdir allocates
 * an inode, and without a journal that looks past every recently freed
 * inode (a buffer lookup each): at a hundred starts a second the mkdirs of
 * the starts were about a sixth of the server's and the agents' CPU, spent
 * in the burst of starts after a wave of task ends, delaying the rest.
 *
 * A thread of the pool's own makes the spares, only once takes have paused
 * for DIR_SPARES_QUIET_MS and while a CPU is free (or a second has gone by
 * without one): it works between one
 * wave of starts and the next, never during one (where it would compete for
 * the CPU and hold the parent directory's lock that a take's rename needs;
 * so it runs at normal priority, and is not left holding that lock as a
 * SCHED_IDLE thread could be). When none is ready the caller makes the
 * directory itself, as without a pool.
 * Spares are named ".spare-N" in their parent: a dot name, never a job's.
 */
#ifndef TIDE_COMMON_DIR_SPARES_H
#define TIDE_COMMON_DIR_SPARES_H

#include <sys/types.h>

/* How long takes must have paused before the thread makes more spares. */
#define DIR_SPARES_QUIET_MS 100
/* Most spares a pool keeps. */
#define DIR_SPARES_MAX 1024

struct dir_spares;

/* Starts keeping keep (1..DIR_SPARES_MAX) spare directories in parent,
 * made with mode (less the umask): adopts the empty spares an earlier run
 * left there (directories of this user, no wider than mode) and starts the
 * thread that makes the rest, first once DIR_SPARES_QUIET_MS have passed.
 * Returns NULL with errno set when it cannot (parent unreadable, no memory,
 * no thread); the caller then makes every directory itself. */
struct dir_spares *dir_spares_create(const char *parent, int keep, mode_t mode);

/* Renames a ready spare to path, which must be in the pool's parent, never
 * over anything already at path. Returns 0 when path is now an empty
 * directory of this user (mode as made), -EEXIST when something was at path
 * (left as it was), -ENOENT when no spare was ready (or s is NULL), else
 * -errno of the rename. Thread-safe. */
int dir_spares_take(struct dir_spares *s, const char *path);

/* How many spares are ready now. */
int dir_spares_ready(struct dir_spares *s);

/* Stops the thread and frees s; the spares stay on disk for the next run
 * to adopt. NULL is fine. */
void dir_spares_destroy(struct dir_spares *s);

#endif
