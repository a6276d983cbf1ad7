/* Group sync of a SQLite WAL file (wal_sync.h). */
#include "store/wal_sync.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* WAL writes of the process (atomic). */
static uint64_t wal_writes;

struct wal_sync {
    pthread_mutex_t mu;
    pthread_cond_t done; /* a sync ended */
    uint64_t synced;     /* the writes the last successful sync covered */
    bool syncing;        /* a thread is in fdatasync */
    int failed;          /* the errno of a failed sync, for good; 0 */
    uint64_t syncs;      /* fdatasync calls (atomic) */
    int fd;              /* the WAL, read-only (fdatasync needs no write access); -1 until opened */
    bool dir_synced;     /* the WAL's name is on disk too */
    char *path;          /* the WAL */
};

struct wal_sync *wal_sync_new(const char *db_path)
{
    struct wal_sync *w = calloc(1, sizeof *w);
    if (!w || asprintf(&w->path, "%s-wal", db_path) < 0) {
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->done, NULL);
    w->fd = -1;
    return w;
}

void wal_sync_free(struct wal_sync *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    pthread_cond_destroy(&w->done);
    pthread_mutex_destroy(&w->mu);
    free(w->path);
    free(w);
}

void wal_sync_note_write(void)
{
    __atomic_add_fetch(&wal_writes, 1, __ATOMIC_RELEASE);
}

uint64_t wal_sync_count(const struct wal_sync *w)
{
    return __atomic_load_n(&w->syncs, __ATOMIC_RELAXED);
}

/* The directory holding path, synced once: a WAL made since the machine
 * started must be found after a crash. 0 or -errno. */
static int sync_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    int n = slash ? snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path)
                  : snprintf(dir, sizeof dir, ".");
    if (n < 0 || (size_t)n >= sizeof dir)
        return -ENAMETOOLONG;
    if (!dir[0])
        snprintf(dir, sizeof dir, "/");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int e = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return e;
}

/* One fdatasync of the WAL (opened, and its directory synced, the first
 * time). Called by the one syncing thread, without w->mu. 0 or -errno. A
 * WAL not made yet holds nothing to sync (the writes counted were another
 * store's). */
static int sync_once(struct wal_sync *w)
{
    if (w->fd < 0 && (w->fd = open(w->path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!w->dir_synced) {
        int e = sync_dir_of(w->path);
        if (e)
            return e;
        w->dir_synced = true;
    }
    __atomic_add_fetch(&w->syncs, 1, __ATOMIC_RELAXED);
    return fdatasync(w->fd) == 0 ? 0 : -errno;
}

void wal_sync_fail(struct wal_sync *w, int errnum)
{
    pthread_mutex_lock(&w->mu);
    if (!w->failed)
        w->failed = errnum > 0 ? errnum : EIO;
    pthread_mutex_unlock(&w->mu);
}

int wal_sync_flush(struct wal_sync *w, struct tide_err *err)
{
    uint64_t want = __atomic_load_n(&wal_writes, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&w->mu);
    while (!w->failed && w->synced < want) {
        if (w->syncing) {
            pthread_cond_wait(&w->done, &w->mu);
            continue;
        }
        /* every write counted by now is in the file */
        uint64_t covers = __atomic_load_n(&wal_writes, __ATOMIC_ACQUIRE);
        w->syncing = true;
        pthread_mutex_unlock(&w->mu);
        int e = sync_once(w);
        pthread_mutex_lock(&w->mu);
        w->syncing = false;
        if (e)
            w->failed = -e;
        else if (covers > w->synced)
            w->synced = covers;
        pthread_cond_broadcast(&w->done);
    }
    int failed = w->failed;
    pthread_mutex_unlock(&w->mu);
    if (failed)
        return tide_err_set(err, TIDE_EIO, NULL,
                            "database: cannot sync %s: %s; what was committed since may be lost "
                            "with the machine: restart the server",
                            w->path, strerror(failed));
    return 0;
}
