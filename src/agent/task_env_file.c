/* A containerised task's variables as an env file in memory (task_env_file.h). */
#include "agent/task_env_file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int agent_task_env_file(char *const *env, size_t nenv, char *const *vars, size_t nvars, char *why,
                        size_t why_size)
{
    for (size_t i = 0; i < nenv + nvars; i++) {
        const char *entry = i < nenv ? env[i] : vars[i - nenv];
        if (strchr(entry, '\n')) {
            const char *eq = strchr(entry, '=');
            snprintf(why, why_size,
                     "env %.*s: a value with a newline cannot be passed into a container",
                     eq ? (int)(eq - entry) : 64, entry);
            return -1;
        }
    }
    int fd = memfd_create("tide-env", MFD_CLOEXEC);
    if (fd < 0)
        return -2;
    for (size_t i = 0; i < nenv + nvars; i++) {
        const char *entry = i < nenv ? env[i] : vars[i - nenv];
        if (write_all(fd, entry, strlen(entry)) != 0 || write_all(fd, "\n", 1) != 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -2;
        }
    }
    return fd;
}
