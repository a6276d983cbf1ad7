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
 * for DIR_SPARES_QUIET_MS, and then one at a time while a CPU is free: it
 * works between one wave of starts and the next, not during one, where it
 * would compete for the CPU and hold the parent directory's lock that a
 * take's rename needs (so it runs at normal priority: a SCHED_IDLE thread
 * could be left holding that lock). On a machine whose CPUs stay busy it
 * makes one spare a second. When none is ready the caller makes the
 * directory itself, as without a pool.
 * Spares are named ".spare-N" in their parent: a dot name, never a job's.
 */
#ifndef TIDE_COMMON_DIR_SPARES_H
#define TIDE_COMMON_DIR_SPARES_H

#include <stdbool.h>
#include <sys/types.h>

/* How long takes must have paused before the thread makes more spares. */
#define DIR_SPARES_QUIET_MS 100
/* Most spares a pool keeps. */
#define DIR_SPARES_MAX 1024

struct dir_spares;

/* Starts keeping keep (1..DIR_SPARES_MAX) spare directories of exactly
 * mode (which the umask must leave whole, as 0700 is under 077) in the
 * existing directory parent. Its thread first adopts the spares an earlier
 * run left there (empty directories of this user with that mode), then
 * makes the rest. Returns NULL with errno set when it cannot (EINVAL, no
 * such directory, no memory, no thread); callers then make every
 * directory themselves. */
struct dir_spares *dir_spares_create(const char *parent, int keep, mode_t mode);

/* Renames a ready spare to path, which must be in the pool's parent, never
 * over anything already at path. Returns 0 when path is now an empty
 * directory of this user with the pool's mode, -EEXIST when something was
 * at path (left as it was), -ENOENT when no spare was ready (or s is NULL,
 * or the filesystem cannot rename without replacing), else -errno of the
 * rename. Thread-safe. */
int dir_spares_take(struct dir_spares *s, const char *path);

/* Makes sure the directory path exists: a spare of s when one is ready,
 * else a mkdir with mode (and its missing parents). *made is true when path
 * is new: empty, this user's, with mode as the umask leaves it; false when
 * it was there already (or a parent had to be made, when it may have
 * raced). 0 or -errno. s may be NULL. Thread-safe. */
int dir_spares_make(struct dir_spares *s, const char *path, mode_t mode, bool *made);

/* How many spares are ready now. */
int dir_spares_ready(struct dir_spares *s);

/* Stops the thread and frees s; the spares stay on disk for the next run
 * to adopt. No take may be in flight. NULL is fine. */
void dir_spares_destroy(struct dir_spares *s);

#endif
