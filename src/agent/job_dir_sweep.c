/* Removing job directories once kept long enough (job_dir_sweep.h). */
#include "agent/job_dir_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/remove_tree.h"

#define TRASH_PREFIX ".trash-"
#define RAN_MARKER ".ran"

struct job_dir_sweep {
    pthread_t thread;
    pthread_mutex_t mu; /* guards the holds and stop; held across a rename */
    pthread_cond_t wake;
    bool stop;
    int64_t *holds; /* a job id per task holding its directory */
    size_t nholds, cap;
    int fd; /* WORK/jobs */
    char *path;
    int keep_s, every_s;
    bool marked; /* RAN_MARKER is there */
};

/* The job id a directory name stands for (digits, no leading zero), or -1. */
static int64_t job_id_of(const char *name)
{
    if (name[0] < '1' || name[0] > '9')
        return -1;
    int64_t id = 0;
    for (const char *p = name; *p; p++) {
        if (*p < '0' || *p > '9' || id > (INT64_MAX - 9) / 10)
            return -1;
        id = id * 10 + (*p - '0');
    }
    return id;
}

static bool held(const struct job_dir_sweep *s, int64_t job_id)
{
    for (size_t i = 0; i < s->nholds; i++)
        if (s->holds[i] == job_id)
            return true;
    return false;
}

/* Removes the tree trash (in WORK/jobs); one that cannot be removed whole
 * is set aside under a name no sweep looks at again. */
static void remove_trash(struct job_dir_sweep *s, const char *trash)
{
    int rc = remove_tree_at(s->fd, trash);
    if (rc == 0)
        return;
    char kept[NAME_MAX + 1];
    snprintf(kept, sizeof kept, ".kept-%s-%lld", trash + strlen(TRASH_PREFIX),
             (long long)time(NULL));
    bool moved = renameat(s->fd, trash, s->fd, kept) == 0;
    log_warn("cannot remove the directory of job %s whole: %s; what is left stays in %s/%s",
             trash + strlen(TRASH_PREFIX), strerror(-rc), s->path, moved ? kept : trash);
}

/* Renames the directory of job id to its trash name if nothing holds it;
 * true when it did. */
static bool retire(struct job_dir_sweep *s, const char *name, int64_t id, char *trash, size_t size)
{
    snprintf(trash, size, TRASH_PREFIX "%" PRId64, id);
    if (!s->marked) {
        int m = openat(s->fd, RAN_MARKER, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (m < 0) /* without it a restart might skip an earlier run's leftovers */
            return false;
        close(m);
        s->marked = true;
    }
    struct stat st;
    /* an earlier trash of the same job goes first (in this sweep or the
     * next); only this thread makes trash */
    if (fstatat(s->fd, trash, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
        return false;
    pthread_mutex_lock(&s->mu);
    bool done = !s->stop && !held(s, id) && renameat(s->fd, name, s->fd, trash) == 0;
    pthread_mutex_unlock(&s->mu);
    return done;
}

/* One look at WORK/jobs: trash is removed, directories due are retired
 * and removed. Entries renamed meanwhile may be seen twice or missed:
 * the next sweep sees them. */
static void sweep_once(struct job_dir_sweep *s)
{
    int fd = openat(s->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
        if (!strncmp(e->d_name, TRASH_PREFIX, strlen(TRASH_PREFIX))) {
            remove_trash(s, e->d_name);
            continue;
        }
        int64_t id = job_id_of(e->d_name);
        struct stat st;
        if (id < 0 || fstatat(s->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_mtime > now - s->keep_s)
            continue;
        char trash[64];
        if (retire(s, e->d_name, id, trash, sizeof trash))
            remove_trash(s, trash);
    }
    closedir(d);
}

static void *sweep_main(void *arg)
{
    struct job_dir_sweep *s = arg;
    /* this thread only: removing many files must not slow the starts */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        pthread_mutex_unlock(&s->mu);
        sweep_once(s);
        pthread_mutex_lock(&s->mu);
        struct timespec until = clock_in_us(CLOCK_MONOTONIC, (int64_t)s->every_s * 1000000);
        while (!s->stop && pthread_cond_timedwait(&s->wake, &s->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

struct job_dir_sweep *job_dir_sweep_create(const char *jobs_dir, int keep_s)
{
    struct job_dir_sweep *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = open(jobs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    s->path = strdup(jobs_dir);
    s->keep_s = keep_s < 0 ? 0 : keep_s;
    s->every_s = s->keep_s / 4 < 1 ? 1 : s->keep_s / 4 > JOB_DIR_SWEEP_EVERY_S ? JOB_DIR_SWEEP_EVERY_S
                                                                             : s->keep_s / 4;
    int e = s->fd < 0 ? errno : !s->path ? ENOMEM : 0;
    if (!e && (e = pthread_mutex_init(&s->mu, NULL)) == 0) {
        if ((e = clock_cond_init(&s->wake, CLOCK_MONOTONIC)) != 0)
            pthread_mutex_destroy(&s->mu);
    } else if (!e) {
        e = ENOMEM;
    }
    if (!e && (e = pthread_create(&s->thread, NULL, sweep_main, s)) != 0) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->mu);
    }
    if (e) {
        if (s->fd >= 0)
            close(s->fd);
        free(s->path);
        free(s);
        errno = e;
        return NULL;
    }
    pthread_setname_np(s->thread, "tide-jobdirs");
    return s;
}

void job_dir_sweep_destroy(struct job_dir_sweep *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    __atomic_store_n(&s->stop, true, __ATOMIC_RELAXED);
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    close(s->fd);
    free(s->holds);
    free(s->path);
    free(s);
}

void job_dir_sweep_hold(struct job_dir_sweep *s, int64_t job_id)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->nholds == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        int64_t *grown = realloc(s->holds, cap * sizeof *grown);
        if (!grown) {
            /* without a hold the directory could go under the task: stop
             * removing any (the thread ends at its next look) */
            log_error("out of memory: job directories are no longer removed");
            __atomic_store_n(&s->stop, true, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&s->mu);
            return;
        }
        s->holds = grown;
        s->cap = cap;
    }
    s->holds[s->nholds++] = job_id;
    pthread_mutex_unlock(&s->mu);
}

void job_dir_sweep_release(struct job_dir_sweep *s, int64_t job_id)
{
    if (!s)
        return;
    char name[24];
    snprintf(name, sizeof name, "%" PRId64, job_id);
    /* keep_s counts from now; a directory never made has no time to set */
    (void)utimensat(s->fd, name, NULL, AT_SYMLINK_NOFOLLOW);
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nholds; i++)
        if (s->holds[i] == job_id) {
            s->holds[i] = s->holds[--s->nholds];
            break;
        }
    pthread_mutex_unlock(&s->mu);
}
