/* Spare task logs, kept for later tasks (log_spares.h). */
#include "agent/log_spares.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
    pthread_mutex_t mu;
    char dir[PATH_MAX]; /* where the spares are; "" before the first put */
    bool full[LOG_SPARES_MAX];
    uid_t owner[LOG_SPARES_MAX];
} spares = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* path's directory in out; false when it has none or it does not fit. */
static bool dir_of(const char *path, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return false;
    int n = snprintf(out, size, "%.*s", (int)(slash - path), path);
    return n >= 0 && (size_t)n < size;
}

/* Slot i's file name in dir. A dot name: never a job's "<id>.<attempt>.log". */
static bool spare_path(const char *dir, int i, char *out, size_t size)
{
    int n = snprintf(out, size, "%s/.spare-%d.log", dir, i);
    return n >= 0 && (size_t)n < size;
}

bool log_spares_take(const char *path, uid_t uid)
{
    char dir[PATH_MAX], spare[PATH_MAX];
    if (!dir_of(path, dir, sizeof dir))
        return false;
    bool taken = false;
    pthread_mutex_lock(&spares.mu);
    for (int i = 0; !taken && i < LOG_SPARES_MAX && !strcmp(dir, spares.dir); i++) {
        if (!spares.full[i] || spares.owner[i] != uid || !spare_path(dir, i, spare, sizeof spare))
            continue;
        /* never over a file already at path: it holds a log; the mode its
         * user may have changed is the log's again */
        if (renameat2(AT_FDCWD, spare, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
            taken = chmod(path, 0600) == 0 || unlink(path) != 0;
        else if (errno == EEXIST)
            break;
        spares.full[i] = false; /* taken, or gone from under us */
    }
    pthread_mutex_unlock(&spares.mu);
    return taken;
}

int log_spares_put(const char *path)
{
    char dir[PATH_MAX], spare[PATH_MAX];
    struct stat st;
    if (!dir_of(path, dir, sizeof dir) || lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return unlink(path) == 0 ? 0 : -errno;
    if (st.st_size > 0 && truncate(path, 0) != 0)
        return unlink(path) == 0 ? 0 : -errno;
    pthread_mutex_lock(&spares.mu);
    if (strcmp(dir, spares.dir)) {
        memset(spares.full, 0, sizeof spares.full);
        snprintf(spares.dir, sizeof spares.dir, "%s", dir);
    }
    int slot = -1;
    for (int i = 0; slot < 0 && i < LOG_SPARES_MAX; i++)
        if (!spares.full[i])
            slot = i;
    /* a leftover of an earlier run in that slot's name is replaced */
    if (slot >= 0 && spare_path(dir, slot, spare, sizeof spare) && rename(path, spare) == 0) {
        spares.full[slot] = true;
        spares.owner[slot] = st.st_uid;
        pthread_mutex_unlock(&spares.mu);
        return 0;
    }
    pthread_mutex_unlock(&spares.mu);
    return unlink(path) == 0 ? 0 : -errno;
}

void log_spares_forget(void)
{
    pthread_mutex_lock(&spares.mu);
    memset(spares.full, 0, sizeof spares.full);
    spares.dir[0] = '\0';
    pthread_mutex_unlock(&spares.mu);
}

int log_spares_clear(const char *logs_dir)
{
    log_spares_forget();
    DIR *d = opendir(logs_dir);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    int removed = 0;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        int n = snprintf(path, sizeof path, "%s/%s", logs_dir, e->d_name);
        if (!strncmp(e->d_name, ".spare-", 7) && n > 0 && (size_t)n < sizeof path &&
            unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
