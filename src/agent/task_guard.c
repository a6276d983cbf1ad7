/* The guard process of task_guard.h and its pipe protocol: a header per
 * message (+pgid to watch a group, -pgid to forget it, and the lengths of
 * the runtime and container name that follow an add for a container). */
#include "agent/task_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/task_container.h"
#include "common/log.h"

/* Matches the agent's task limit with room for groups not yet removed. */
#define GUARD_MAX_GROUPS 2048

struct guard_header {
    int32_t pgid;         /* > 0: add, < 0: remove */
    uint16_t runtime_len; /* bytes of the runtime that follow; 0: a bare task */
    uint16_t name_len;    /* then the container's name */
};

struct guarded {
    pid_t pgid;
    char *runtime;   /* NULL for a bare task */
    char *container; /* its name */
};

/* Reads exactly n bytes; false at EOF or an error (the agent is gone). */
static bool read_full(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

/* A message's runtime and name as new strings (NULL for a bare task, or
 * when out of memory: the group is still killed). False when the agent is
 * gone. */
static bool read_container(int fd, const struct guard_header *h, struct guarded *g)
{
    static char runtime[UINT16_MAX + 1], name[UINT16_MAX + 1];
    g->runtime = g->container = NULL;
    if (!read_full(fd, runtime, h->runtime_len) || !read_full(fd, name, h->name_len))
        return false;
    if (!h->runtime_len || !h->name_len)
        return true;
    runtime[h->runtime_len] = '\0';
    name[h->name_len] = '\0';
    g->runtime = strdup(runtime);
    g->container = strdup(name);
    if (!g->runtime || !g->container) {
        free(g->runtime);
        free(g->container);
        g->runtime = g->container = NULL;
    }
    return true;
}

static void forget(struct guarded *g)
{
    free(g->runtime);
    free(g->container);
}

static void guard_run(int fd)
{
    static struct guarded groups[GUARD_MAX_GROUPS];
    size_t n = 0;
    /* a terminal's ^C or a stray TERM must not take the safety net down
     * before the agent itself */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    setpgid(0, 0);
    for (;;) {
        struct guard_header h;
        struct guarded g = {0};
        if (!read_full(fd, &h, sizeof h) || !read_container(fd, &h, &g))
            break; /* EOF: the agent is gone */
        g.pgid = (pid_t)h.pgid;
        if (h.pgid > 0 && n < GUARD_MAX_GROUPS) {
            groups[n++] = g;
            continue;
        }
        forget(&g);
        if (h.pgid < 0)
            for (size_t i = 0; i < n; i++)
                if (groups[i].pgid == (pid_t)-h.pgid) {
                    forget(&groups[i]);
                    groups[i] = groups[--n];
                    break;
                }
    }
    for (size_t i = 0; i < n; i++)
        kill(-groups[i].pgid, SIGKILL);
    /* after the kills: a runtime client killed while it made its container
     * can make no more of it, and what it made is removed here. The
     * runtime's monitor, not the task's group, is the container's parent,
     * so the kill alone would leave it running (and its job running twice
     * once the server requeues it elsewhere) */
    for (size_t i = 0; i < n; i++)
        if (groups[i].container)
            agent_container_remove(groups[i].runtime, groups[i].container);
}

int agent_task_guard_start(struct agent_task_guard *g)
{
    g->pid = 0;
    g->fd = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(p[0]);
        close(p[1]);
        return e;
    }
    if (pid == 0) {
        close(p[1]);
        /* stdio and inherited descriptors stay as they are; the guard reads
         * its pipe and writes nothing but a removal it could not start */
        guard_run(p[0]);
        _exit(0);
    }
    close(p[0]);
    g->pid = pid;
    g->fd = p[1];
    return 0;
}

static void guard_send(struct agent_task_guard *g, int32_t pgid, const char *runtime,
                       const char *container)
{
    if (g->fd < 0)
        return;
    size_t rlen = runtime && container ? strlen(runtime) : 0;
    size_t nlen = runtime && container ? strlen(container) : 0;
    if (rlen > PATH_MAX || nlen >= AGENT_CONTAINER_NAME_MAX) {
        log_warn("task guard: runtime or container name too long; only the group is guarded");
        rlen = nlen = 0;
    }
    char buf[sizeof(struct guard_header) + PATH_MAX + AGENT_CONTAINER_NAME_MAX];
    struct guard_header h = {
        .pgid = pgid, .runtime_len = (uint16_t)rlen, .name_len = (uint16_t)nlen};
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, runtime ? runtime : "", rlen);
    memcpy(buf + sizeof h + rlen, container ? container : "", nlen);
    size_t len = sizeof h + rlen + nlen, done = 0;
    /* one writer (the agent's loop); a long runtime path may take more than
     * one write, which the guard reads as one message all the same */
    while (done < len) {
        ssize_t w = write(g->fd, buf + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            log_warn("task guard: cannot write to its pipe: %s", strerror(errno));
            return;
        }
        done += (size_t)w;
    }
}

void agent_task_guard_add(struct agent_task_guard *g, pid_t pgid, const char *runtime,
                          const char *container)
{
    guard_send(g, (int32_t)pgid, runtime, container);
}

void agent_task_guard_remove(struct agent_task_guard *g, pid_t pgid)
{
    guard_send(g, -(int32_t)pgid, NULL, NULL);
}

void agent_task_guard_stop(struct agent_task_guard *g)
{
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
    if (g->pid > 0) {
        while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    g->pid = 0;
}
