/* The data directory's lock (see data_lock.h). */
#include "server/data_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int data_lock_acquire(const char *dir, int *fd_out, struct tide_err *err)
{
    *fd_out = -1;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/server.lock", dir) >= sizeof path)
        return tide_err_set(err, TIDE_EINVAL, "data", "data directory path too long");
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return tide_err_set(err, TIDE_EIO, "data", "cannot open %s: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[32] = "";
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        close(fd);
        if (e != EWOULDBLOCK)
            return tide_err_set(err, TIDE_EIO, "data", "cannot lock %s: %s", path, strerror(e));
        holder[n > 0 ? n : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        return tide_err_set(err, TIDE_ECONFLICT, "data",
                            "data directory %s is in use by another tide server (pid %s); "
                            "two servers must never share one",
                            dir, holder[0] ? holder : "unknown");
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        int e = errno;
        close(fd);
        return tide_err_set(err, TIDE_EIO, "data", "cannot write %s: %s", path, strerror(e));
    }
    *fd_out = fd;
    return 0;
}
