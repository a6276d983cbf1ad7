/* Files, randomness and clocks for the shells (the core has none of these). */
#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/remove_tree.h"

int fs_mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return -ENAMETOOLONG;
    /* one call when the parents are there (most calls: a job's directory
     * under one that exists); the walk only when one is missing */
    if (mkdir(path, mode) == 0 || errno == EEXIST)
        return 0;
    if (errno != ENOENT)
        return -errno;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if ((size_t)st.st_size > max_bytes) {
        close(fd);
        return -EFBIG;
    }
    size_t cap = (size_t)st.st_size + 1, used = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        if (used + 1 >= cap) {
            if (cap > max_bytes) {
                free(buf);
                close(fd);
                return -EFBIG;
            }
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                close(fd);
                return -ENOMEM;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + used, cap - used - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = -errno;
            free(buf);
            close(fd);
            return e;
        }
        if (r == 0)
            break;
        used += (size_t)r;
    }
    close(fd);
    buf[used] = '\0';
    *out = buf;
    if (len)
        *len = used;
    return 0;
}

int fs_write_file_atomic(const char *path, const char *data, size_t len, mode_t mode)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = -errno;
            close(fd);
            unlink(tmp);
            return e;
        }
        done += (size_t)w;
    }
    if (fchmod(fd, mode) != 0 || fsync(fd) != 0) {
        int e = -errno;
        close(fd);
        unlink(tmp);
        return e;
    }
    if (close(fd) != 0) {
        int e = -errno;
        unlink(tmp);
        return e;
    }
    if (rename(tmp, path) != 0) {
        int e = -errno;
        unlink(tmp);
        return e;
    }
    return 0;
}

int fs_remove_tree(const char *path)
{
    char dir[4096];
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--; /* "a/b/" is "a/b" */
    if (n >= sizeof dir)
        return -ENAMETOOLONG;
    memcpy(dir, path, n);
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    char name[NAME_MAX + 1];
    if (snprintf(name, sizeof name, "%s", slash ? slash + 1 : dir) >= (int)sizeof name)
        return -ENAMETOOLONG;
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return -EINVAL;
    if (slash)
        slash[slash == dir] = '\0'; /* "/x": its directory is "/" */
    int fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    int rc = remove_tree_at(fd, name, NULL);
    close(fd);
    return rc;
}

int fs_random_hex(char *out, size_t nbytes)
{
    unsigned char raw[64];
    if (nbytes > sizeof raw)
        return -EINVAL;
    size_t got = 0;
    while (got < nbytes) {
        ssize_t r = getrandom(raw + got, nbytes - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        got += (size_t)r;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    return 0;
}

int64_t clock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec clock_in_us(clockid_t clock, int64_t us)
{
    struct timespec t;
    clock_gettime(clock, &t);
    int64_t ns = t.tv_nsec + us * 1000;
    t.tv_sec += ns / 1000000000;
    t.tv_nsec = ns % 1000000000;
    return t;
}

int64_t clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void clock_sleep_ms(int64_t ms, volatile int *stop)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        if (stop && *stop)
            return;
    }
}

int clock_cond_init(pthread_cond_t *cond, clockid_t clock)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc)
        return rc;
    rc = pthread_condattr_setclock(&attr, clock);
    if (!rc)
        rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

int fs_make_private(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !(st.st_mode & 077))
        return 0;
    if (chmod(path, 0600) != 0)
        return -errno;
    log_warn("%s was readable by others (mode %03o): now 0600", path,
             (unsigned)(st.st_mode & 0777));
    return 0;
}

void fs_warn_if_not_private(const char *path, const char *what)
{
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077))
        log_warn("%s %s is readable by others (mode %03o): chmod 600 it", what, path,
                 (unsigned)(st.st_mode & 0777));
}
