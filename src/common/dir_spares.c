/* Spare directories made ahead of need (dir_spares.h). */
#include "common/dir_spares.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"

/* After a mkdir failed for a reason other than a name in use (a full disk,
 * no rights), the next try waits this long. */
#define DIR_SPARES_RETRY_MS 1000
/* While every CPU is busy, the thread looks again this much later, and
 * after this long makes the spare anyway (a machine never idle still gets
 * them, as a start would have made them). */
#define DIR_SPARES_BUSY_MS 20
#define DIR_SPARES_BUSY_MAX_MS 1000

struct dir_spares {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC: a take into a full pool, or stop */
    char *parent;
    mode_t mode;
    int keep;
    unsigned *ready; /* the numbers N of the ready ".spare-N", a stack */
    int nready;
    unsigned next;         /* the number the thread tries next */
    int64_t last_take_ms;  /* monotonic; the thread waits for quiet after it */
    int64_t retry_at_ms;   /* monotonic; after a failed mkdir */
    int64_t busy_since_ms; /* monotonic; since when it waits for a free CPU, or 0 */
    long ncpus;            /* online */
    int loadavg_fd;        /* /proc/loadavg, read again with pread; -1: none */
    bool adopted;          /* the earlier run's spares have been looked for */
    bool full_wait;        /* the thread waits for a take (the pool is full) */
    bool off;              /* renames cannot refuse to replace here: no pool */
    bool stop;
};

static bool spare_path(const struct dir_spares *s, unsigned n, char *out, size_t size)
{
    int w = snprintf(out, size, "%s/.spare-%u", s->parent, n);
    return w >= 0 && (size_t)w < size;
}

/* n when name is ".spare-N" as spare_path writes it (no leading zero),
 * else -1. */
static long spare_number(const char *name)
{
    const char *digits = name + 7;
    if (strncmp(name, ".spare-", 7) || digits[0] < '0' || digits[0] > '9' ||
        (digits[0] == '0' && digits[1]))
        return -1;
    char *end;
    errno = 0;
    unsigned long n = strtoul(digits, &end, 10);
    return *end || errno || n >= UINT_MAX ? -1 : (long)n;
}

/* Whether the directory at name in dfd is empty. */
static bool dir_is_empty(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return false;
    }
    bool empty = true;
    struct dirent *e;
    while (empty && (e = readdir(d)) != NULL)
        empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty;
}

/* Takes up the spares an earlier run left: only empty directories of this
 * user with the pool's mode, which nobody else can have used; and moves the
 * next number past every spare name there. Reads the parent (of any size:
 * job directories pile up there) without the lock. */
static void adopt(struct dir_spares *s)
{
    unsigned found[DIR_SPARES_MAX], next = 0;
    int nfound = 0;
    DIR *d = opendir(s->parent);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        long n = spare_number(e->d_name);
        if (n < 0)
            continue;
        if ((unsigned)n >= next)
            next = (unsigned)n + 1;
        struct stat st;
        if (nfound < s->keep && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 07777) == s->mode &&
            dir_is_empty(dirfd(d), e->d_name))
            found[nfound++] = (unsigned)n;
    }
    if (d)
        closedir(d);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < nfound && s->nready < s->keep; i++)
        s->ready[s->nready++] = found[i];
    if (next > s->next)
        s->next = next;
    s->adopted = true;
    pthread_mutex_unlock(&s->mu);
}

/* Whether a CPU is free now: fewer tasks other than this thread are
 * runnable than there are CPUs (/proc/loadavg's "R/T"). A pool whose quiet
 * started ahead of other processes' (an agent beside fifteen others in a
 * wave) must not compete with their starts. In doubt: true. */
static bool cpu_free(const struct dir_spares *s)
{
    char text[128];
    ssize_t n = s->loadavg_fd >= 0 ? pread(s->loadavg_fd, text, sizeof text - 1, 0) : -1;
    long running;
    if (n <= 0)
        return true;
    text[n] = '\0';
    if (sscanf(text, "%*s %*s %*s %ld/", &running) != 1)
        return true;
    return running - 1 < s->ncpus;
}

/* Waits on s->cond until the monotonic time at_ms, or a signal. */
static void wait_until(struct dir_spares *s, int64_t at_ms)
{
    int64_t ms = at_ms - clock_mono_ms();
    if (ms <= 0)
        return;
    struct timespec at = clock_in_us(CLOCK_MONOTONIC, ms * 1000);
    pthread_cond_timedwait(&s->cond, &s->mu, &at);
}

/* Under the lock: whether the thread may make a spare now; if not, it has
 * waited (for a take, the quiet, a free CPU or the retry) and looks again. */
static bool may_make(struct dir_spares *s)
{
    if (s->off || s->nready >= s->keep) {
        s->full_wait = true;
        pthread_cond_wait(&s->cond, &s->mu);
        s->full_wait = false;
        return false;
    }
    int64_t now = clock_mono_ms(), quiet_at = s->last_take_ms + DIR_SPARES_QUIET_MS;
    if (now < quiet_at || now < s->retry_at_ms) {
        wait_until(s, quiet_at > s->retry_at_ms ? quiet_at : s->retry_at_ms);
        return false;
    }
    pthread_mutex_unlock(&s->mu);
    bool free_cpu = cpu_free(s);
    pthread_mutex_lock(&s->mu);
    if (free_cpu) {
        s->busy_since_ms = 0;
        return true;
    }
    if (!s->busy_since_ms)
        s->busy_since_ms = now;
    if (now - s->busy_since_ms >= DIR_SPARES_BUSY_MAX_MS) {
        s->busy_since_ms = 0;
        return true;
    }
    wait_until(s, now + DIR_SPARES_BUSY_MS);
    return false;
}

static void *fill(void *arg)
{
    struct dir_spares *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        if (!may_make(s) || s->stop)
            continue;
        if (!s->adopted) {
            pthread_mutex_unlock(&s->mu);
            adopt(s);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        unsigned n = s->next++;
        pthread_mutex_unlock(&s->mu);
        char path[PATH_MAX];
        int e = !spare_path(s, n, path, sizeof path) ? ENAMETOOLONG
                : mkdir(path, s->mode) != 0          ? errno
                                                     : 0;
        pthread_mutex_lock(&s->mu);
        /* a failed take may have put its spare back meanwhile: a spare with
         * no room stays on disk for the next run */
        if (!e && s->nready < s->keep)
            s->ready[s->nready++] = n;
        else if (e && e != EEXIST) /* EEXIST: a leftover not adopted; try the next name */
            s->retry_at_ms = clock_mono_ms() + DIR_SPARES_RETRY_MS;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void free_pool(struct dir_spares *s)
{
    if (s->loadavg_fd >= 0)
        close(s->loadavg_fd);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    free(s->ready);
    free(s->parent);
    free(s);
}

/* The lock and its condition (on the monotonic clock); 0 or an errno. */
static int init_sync(struct dir_spares *s)
{
    int e = clock_cond_init(&s->cond, CLOCK_MONOTONIC);
    if (!e && (e = pthread_mutex_init(&s->mu, NULL)) != 0)
        pthread_cond_destroy(&s->cond);
    return e;
}

struct dir_spares *dir_spares_create(const char *parent, int keep, mode_t mode)
{
    struct stat st;
    if (keep < 1 || keep > DIR_SPARES_MAX) {
        errno = EINVAL;
        return NULL;
    }
    if (stat(parent, &st) != 0)
        return NULL;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return NULL;
    }
    struct dir_spares *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    int e = init_sync(s);
    if (e) {
        free(s);
        errno = e;
        return NULL;
    }
    s->loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    s->ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (s->ncpus < 1)
        s->ncpus = 1;
    s->parent = strdup(parent);
    s->ready = calloc((size_t)keep, sizeof *s->ready);
    s->keep = keep;
    s->mode = mode & 07777;
    s->last_take_ms = clock_mono_ms(); /* a start's first takes come soon */
    e = !s->parent || !s->ready ? ENOMEM : pthread_create(&s->thread, NULL, fill, s);
    if (e) {
        free_pool(s);
        errno = e;
        return NULL;
    }
    pthread_setname_np(s->thread, "tide-spares");
    return s;
}

int dir_spares_take(struct dir_spares *s, const char *path)
{
    if (!s)
        return -ENOENT;
    pthread_mutex_lock(&s->mu);
    s->last_take_ms = clock_mono_ms();
    s->busy_since_ms = 0; /* a new quiet, and a new wait for a free CPU */
    bool any = !s->off && s->nready > 0;
    unsigned n = any ? s->ready[--s->nready] : 0;
    if (s->full_wait) /* else it is waiting for quiet, and sees this take then */
        pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->mu);
    if (!any)
        return -ENOENT;
    char spare[PATH_MAX];
    if (!spare_path(s, n, spare, sizeof spare))
        return -ENAMETOOLONG;
    if (renameat2(AT_FDCWD, spare, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    int e = errno;
    bool unsupported = e == EINVAL || e == ENOSYS; /* NFS, some FUSE */
    /* still there (path was taken, or its directory is missing): keep it */
    struct stat st;
    bool kept = !unsupported && lstat(spare, &st) == 0;
    pthread_mutex_lock(&s->mu);
    if (unsupported)
        s->off = true;
    else if (kept && s->nready < s->keep)
        s->ready[s->nready++] = n;
    pthread_mutex_unlock(&s->mu);
    return unsupported ? -ENOENT : -e;
}

int dir_spares_make(struct dir_spares *s, const char *path, mode_t mode, bool *made)
{
    *made = false;
    int e = dir_spares_take(s, path);
    if (e == 0 || e == -EEXIST) {
        *made = e == 0;
        return 0;
    }
    if (mkdir(path, mode) == 0) {
        *made = true;
        return 0;
    }
    if (errno == EEXIST)
        return 0;
    if (errno != ENOENT)
        return -errno;
    return fs_mkdir_p(path, mode); /* *made stays false: it may have raced */
}

int dir_spares_ready(struct dir_spares *s)
{
    if (!s)
        return 0;
    pthread_mutex_lock(&s->mu);
    int n = s->nready;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void dir_spares_destroy(struct dir_spares *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    free_pool(s);
}
