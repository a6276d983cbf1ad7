/*
 * Small file-system and OS helpers for the shells: directories, whole-file
 * reads, atomic writes, random tokens and the wall clock.
 */
#ifndef TIDE_FSUTIL_H
#define TIDE_FSUTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

/* mkdir -p with the given mode for directories it creates. 0 or -errno. */
int fs_mkdir_p(const char *path, mode_t mode);

/* rm -r: removes path and everything under it, as remove_tree_at does (no
 * link followed, no mount point entered; a trailing '/' is ignored, so
 * "file/" removes the file). A missing path is success. 0 or -errno
 * (-EINVAL for "" and a path ending in "." or ".."). */
int fs_remove_tree(const char *path);

/* Reads a whole file into a new NUL-terminated buffer the caller frees.
 * Fails with -EFBIG when it is larger than max_bytes. 0 or -errno. */
int fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len);

/* Writes data to path atomically (temp file, fsync, rename) with mode. */
int fs_write_file_atomic(const char *path, const char *data, size_t len, mode_t mode);

/* Fills out with 2*nbytes hex characters of kernel randomness plus NUL. */
int fs_random_hex(char *out, size_t nbytes);

/* Makes the secret file at path owner-only (0600) when others could read
 * it, and says so (log_warn). 0 (also when there is no such file), or
 * -errno when it cannot be changed. */
int fs_make_private(const char *path);

/* Warns (log_warn) when the secret file at path (a private key) can be read
 * by others than its owner: the operator's to fix, so not changed here. */
void fs_warn_if_not_private(const char *path, const char *what);

/* Wall clock in milliseconds since the epoch; shells pass it to the core. */
int64_t clock_now_ms(void);

/* Monotonic clock in milliseconds, for timeouts and intervals. */
int64_t clock_mono_ms(void);

/* clock (CLOCK_REALTIME, CLOCK_MONOTONIC) us microseconds from now: the
 * deadline of a pthread_cond_timedwait on a condition of that clock. */
struct timespec clock_in_us(clockid_t clock, int64_t us);

/* Initialises cond so that its timed waits read clock (their deadlines from
 * clock_in_us). 0 or an errno value. */
int clock_cond_init(pthread_cond_t *cond, clockid_t clock);

/* Sleeps for ms milliseconds (restarts on EINTR unless *stop becomes non-zero). */
void clock_sleep_ms(int64_t ms, volatile int *stop);

#endif
