/* Removing job directories once kept long enough (job_dir_sweep.h). */
#include "agent/job_dir_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
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
/* Most directories handed to the loop by one look; the rest go at the next. */
#define DUE_MAX 4096

struct job_dir_sweep {
    pthread_t thread;
    pthread_mutex_t mu; /* guards due and ndue; never held across a system call */
    pthread_cond_t wake;
    bool stop;      /* atomic */
    int64_t *due;   /* job ids whose directories are past their time */
    size_t ndue;    /* also read atomically by the loop, without mu */
    int fd;         /* WORK/jobs */
    char *path;
    int keep_s, every_s;
    bool looked;    /* the thread's first look is over */
    bool marked;    /* the loop's: RAN_MARKER is there */
    bool mark_told; /* the loop's: a failure to leave it was logged */
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

static bool stopping(const struct job_dir_sweep *s)
{
    return __atomic_load_n(&s->stop, __ATOMIC_RELAXED);
}

/* Failures no later look would mend: the tree is set aside. */
static bool lasting(int rc)
{
    return rc == -EXDEV || rc == -ELOOP || rc == -EPERM || rc == -EACCES || rc == -EBUSY;
}

/* Removes the tree trash (in WORK/jobs). One that cannot be removed whole
 * for good is set aside under a name no look takes up again; 0, or the
 * failure to try again. */
static int remove_trash(struct job_dir_sweep *s, const char *trash)
{
    int rc = remove_tree_at(s->fd, trash, &s->stop);
    if (rc == 0 || !lasting(rc))
        return rc;
    const char *id = trash + strlen(TRASH_PREFIX);
    char kept[NAME_MAX + 1];
    snprintf(kept, sizeof kept, ".kept-%s-%lld", id, (long long)time(NULL));
    if (renameat(s->fd, trash, s->fd, kept) != 0)
        return -errno;
    char why[64];
    if (rc == -ELOOP)
        snprintf(why, sizeof why, "more than %d levels deep", REMOVE_TREE_MAX_DEPTH);
    else
        snprintf(why, sizeof why, "%s", rc == -EXDEV ? "a mount point in it" : strerror(-rc));
    log_warn("cannot remove all of job %s's directory (%s); what is left stays in %s/%s", id, why,
             s->path, kept);
    return 0;
}

/* Hands the loop the directories due (replacing what it has not taken). */
static void hand_due(struct job_dir_sweep *s, int64_t *ids, size_t n)
{
    pthread_mutex_lock(&s->mu);
    int64_t *old = s->due;
    s->due = ids;
    __atomic_store_n(&s->ndue, n, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->mu);
    free(old);
}

/* One look at WORK/jobs: trash is removed and the directories past their
 * time are handed to the loop; on the first look, those are kept once more
 * instead. Entries renamed meanwhile may be seen twice or missed: the next
 * look sees them. */
static void look(struct job_dir_sweep *s)
{
    int fd = openat(s->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    int64_t *due = NULL; /* made once one is due */
    size_t ndue = 0, failed = 0;
    char first_failed[NAME_MAX + 1] = "";
    int first_rc = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && !stopping(s)) {
        if (!strncmp(e->d_name, TRASH_PREFIX, strlen(TRASH_PREFIX))) {
            int rc = remove_trash(s, e->d_name);
            if (rc && rc != -ECANCELED && !failed++) {
                snprintf(first_failed, sizeof first_failed, "%s", e->d_name);
                first_rc = rc;
            }
            continue;
        }
        int64_t id = job_id_of(e->d_name);
        struct stat st;
        if (id < 0 || fstatat(s->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_mtime > now - s->keep_s)
            continue;
        if (!s->looked) /* maybe a task's that died with the last run */
            (void)utimensat(s->fd, e->d_name, NULL, AT_SYMLINK_NOFOLLOW);
        else if (ndue < DUE_MAX && (due || (due = malloc(DUE_MAX * sizeof *due))))
            due[ndue++] = id;
    }
    closedir(d);
    s->looked = true;
    hand_due(s, due, ndue);
    if (failed)
        log_warn("%zu job director%s not removed this time (%s/%s: %s); trying again later",
                 failed, failed == 1 ? "y" : "ies", s->path, first_failed, strerror(-first_rc));
}

static void *sweep_main(void *arg)
{
    struct job_dir_sweep *s = arg;
    /* this thread only: removing many files must not slow the starts */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    while (!stopping(s)) {
        look(s);
        pthread_mutex_lock(&s->mu);
        struct timespec until = clock_in_us(CLOCK_MONOTONIC, (int64_t)s->every_s * 1000000);
        /* woken early by the loop once it made trash, or to stop */
        if (!stopping(s))
            pthread_cond_timedwait(&s->wake, &s->mu, &until);
        pthread_mutex_unlock(&s->mu);
    }
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
    int quarter = s->keep_s / 4;
    s->every_s = quarter < 1 ? 1 : quarter > JOB_DIR_SWEEP_EVERY_S ? JOB_DIR_SWEEP_EVERY_S : quarter;
    int e = s->fd < 0 ? errno : !s->path ? ENOMEM : 0;
    if (!e && !remove_tree_can_tell_mounts(s->fd))
        e = ENOSYS;
    if (!e && (e = pthread_mutex_init(&s->mu, NULL)) == 0 &&
        (e = clock_cond_init(&s->wake, CLOCK_MONOTONIC)) != 0)
        pthread_mutex_destroy(&s->mu);
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
    __atomic_store_n(&s->stop, true, __ATOMIC_RELAXED);
    pthread_mutex_lock(&s->mu);
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    close(s->fd);
    free(s->due);
    free(s->path);
    free(s);
}

/* Leaves RAN_MARKER once; false (logged once) when it cannot. */
static bool mark_ran(struct job_dir_sweep *s)
{
    if (s->marked)
        return true;
    int fd = openat(s->fd, RAN_MARKER, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        /* without it a restart could skip an earlier run's leftovers */
        if (!s->mark_told)
            log_warn("cannot make %s/%s (%s): job directories are not removed", s->path,
                     RAN_MARKER, strerror(errno));
        s->mark_told = true;
        return false;
    }
    close(fd);
    s->marked = true;
    return true;
}

void job_dir_sweep_retire_due(struct job_dir_sweep *s, bool (*in_use)(int64_t job_id, void *arg),
                              void *arg)
{
    if (!s || !__atomic_load_n(&s->ndue, __ATOMIC_ACQUIRE) || pthread_mutex_trylock(&s->mu) != 0)
        return;
    int64_t *due = s->due;
    size_t n = s->ndue;
    s->due = NULL;
    __atomic_store_n(&s->ndue, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->mu);
    bool made = false;
    time_t now = time(NULL);
    for (size_t i = 0; i < n && mark_ran(s); i++) {
        char name[24], trash[32];
        snprintf(name, sizeof name, "%" PRId64, due[i]);
        snprintf(trash, sizeof trash, TRASH_PREFIX "%" PRId64, due[i]);
        struct stat st;
        /* a task of the job may have ended (and touched it) since the look */
        if (in_use(due[i], arg) || fstatat(s->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_mtime > now - s->keep_s)
            continue;
        /* over an earlier trash of the job only if that one is empty */
        made |= renameat(s->fd, name, s->fd, trash) == 0;
    }
    free(due);
    if (made)
        pthread_cond_signal(&s->wake); /* a wake missed is the next look's */
}

void job_dir_sweep_touch(struct job_dir_sweep *s, int64_t job_id)
{
    if (!s)
        return;
    char name[24];
    snprintf(name, sizeof name, "%" PRId64, job_id);
    /* a directory never made has no time to set */
    (void)utimensat(s->fd, name, NULL, AT_SYMLINK_NOFOLLOW);
}
