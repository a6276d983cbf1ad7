/* Finding and killing the processes tasks left behind (leftovers.h). */
#include "agent/leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENVIRON_MAX (256 * 1024)
#define SCANS_MAX 8

/* Whether the NUL-separated environment in [env, env + len) has
 * TIDE_WORK_DIR=<want> exactly, or, with prefix, starting with want. */
static bool env_matches(const char *env, size_t len, const char *want, bool prefix)
{
    static const char key[] = "TIDE_WORK_DIR=";
    size_t kl = sizeof key - 1, wl = strlen(want);
    const char *end = env + len;
    while (env < end) {
        const char *nul = memchr(env, '\0', (size_t)(end - env));
        size_t el = nul ? (size_t)(nul - env) : (size_t)(end - env);
        if (el >= kl + wl && !memcmp(env, key, kl) && !memcmp(env + kl, want, wl) &&
            (prefix ? el > kl + wl : el == kl + wl))
            return true;
        env += el + 1;
    }
    return false;
}

/* Reads /proc/<pid>/environ into buf; its length, or -1. */
static ssize_t read_environ(const char *proc, const char *pid, char *buf, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/environ", proc, pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return (ssize_t)got;
}

/* One pass over proc; kills what matches and returns how many. */
static int scan_once(const char *proc, const char *want, bool prefix, char *buf)
{
    DIR *d = opendir(proc);
    if (!d)
        return 0;
    int killed = 0;
    long self = (long)getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end || pid == self)
            continue;
        ssize_t n = read_environ(proc, e->d_name, buf, ENVIRON_MAX);
        if (n <= 0 || !env_matches(buf, (size_t)n, want, prefix))
            continue;
        if (kill((pid_t)pid, SIGKILL) == 0)
            killed++;
    }
    closedir(d);
    return killed;
}

int agent_leftovers_kill(const char *proc, const char *jobs_dir, int64_t job_id)
{
    char want[4200];
    int w = job_id >= 0 ? snprintf(want, sizeof want, "%s/%" PRId64, jobs_dir, job_id)
                        : snprintf(want, sizeof want, "%s/", jobs_dir);
    if (w < 0 || (size_t)w >= sizeof want)
        return 0;
    char *buf = malloc(ENVIRON_MAX);
    if (!buf)
        return 0;
    int total = 0;
    for (int i = 0; i < SCANS_MAX; i++) {
        int k = scan_once(proc, want, job_id < 0, buf);
        total += k;
        if (k == 0)
            break;
        usleep(10000); /* let the killed ones die before looking again */
    }
    free(buf);
    return total;
}

bool agent_process_is_jobs(const char *proc, pid_t pid, const char *jobs_dir, int64_t job_id)
{
    static char buf[ENVIRON_MAX]; /* the agent's one thread */
    char want[4200], name[32];
    int w = snprintf(want, sizeof want, "%s/%" PRId64, jobs_dir, job_id);
    if (w < 0 || (size_t)w >= sizeof want || pid <= 0)
        return false;
    snprintf(name, sizeof name, "%ld", (long)pid);
    ssize_t n = read_environ(proc, name, buf, sizeof buf);
    return n > 0 && env_matches(buf, (size_t)n, want, false);
}
