/*
 * Task output as the server keeps it: one file per attempt,
 * DATA/logs/<job>/<attempt>.log. An agent's chunk carries its byte offset,
 * so a retried heartbeat never duplicates output: bytes the file already
 * has are skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "server/server.h"

static void log_path(char *out, size_t size, const char *data_dir, int64_t job_id, int attempt)
{
    snprintf(out, size, "%s/logs/%lld/%d.log", data_dir, (long long)job_id, attempt);
}

int64_t log_store_size(const char *data_dir, int64_t job_id, int attempt)
{
    char path[1024];
    log_path(path, sizeof path, data_dir, job_id, attempt);
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? 0 : -errno;
    return st.st_size;
}

/* fsync of the file or directory at path: 0 or -errno. */
static int sync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = (flags & O_DIRECTORY ? fsync(fd) : fdatasync(fd)) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

int log_store_sync(const char *data_dir, int64_t job_id, int attempt)
{
    char path[1024];
    log_path(path, sizeof path, data_dir, job_id, attempt);
    int rc = sync_path(path, O_RDONLY);
    if (rc == -ENOENT)
        return 0; /* printed nothing */
    snprintf(path, sizeof path, "%s/logs/%lld", data_dir, (long long)job_id);
    if (!rc)
        rc = sync_path(path, O_RDONLY | O_DIRECTORY);
    snprintf(path, sizeof path, "%s/logs", data_dir);
    if (!rc)
        rc = sync_path(path, O_RDONLY | O_DIRECTORY);
    return rc ? rc : 1;
}

int64_t log_store_append(const char *data_dir, int64_t job_id, int attempt, int64_t offset,
                         const char *data, size_t len)
{
    char dir[1024], path[1024];
    snprintf(dir, sizeof dir, "%s/logs/%lld", data_dir, (long long)job_id);
    int rc = fs_mkdir_p(dir, 0700);
    if (rc)
        return rc;
    log_path(path, sizeof path, data_dir, job_id, attempt);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    int64_t have = st.st_size;
    /* A gap (offset beyond what we have) means lost chunks: refuse, and the
     * returned size tells the agent where to resend from. */
    if (offset <= have && offset + (int64_t)len > have) {
        size_t skip = (size_t)(have - offset);
        const char *p = data + skip;
        size_t left = len - skip;
        while (left) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                int e = -errno;
                close(fd);
                return e;
            }
            p += w;
            left -= (size_t)w;
            have += w;
        }
    }
    close(fd);
    return have;
}

int64_t log_store_read(const char *data_dir, int64_t job_id, int attempt, int64_t offset, char *buf,
                       size_t max)
{
    char path[1024];
    log_path(path, sizeof path, data_dir, job_id, attempt);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    ssize_t r;
    do
        r = pread(fd, buf, max, offset);
    while (r < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    return r < 0 ? -e : r;
}
