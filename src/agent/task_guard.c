/* The guard process of task_guard.h and its tiny pipe protocol: one int32
 * per message, +pgid to watch a group, -pgid to forget it. */
#include "agent/task_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"

/* Matches the agent's task limit with room for groups not yet removed. */
#define GUARD_MAX_GROUPS 2048

static void guard_run(int fd)
{
    static pid_t groups[GUARD_MAX_GROUPS];
    size_t n = 0;
    /* a terminal's ^C or a stray TERM must not take the safety net down
     * before the agent itself */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    setpgid(0, 0);
    for (;;) {
        int32_t msg;
        ssize_t r = read(fd, &msg, sizeof msg);
        if (r < 0 && errno == EINTR)
            continue;
        if (r != (ssize_t)sizeof msg)
            break; /* EOF: the agent is gone */
        if (msg > 0 && n < GUARD_MAX_GROUPS) {
            groups[n++] = (pid_t)msg;
        } else if (msg < 0) {
            for (size_t i = 0; i < n; i++)
                if (groups[i] == (pid_t)-msg) {
                    groups[i] = groups[--n];
                    break;
                }
        }
    }
    for (size_t i = 0; i < n; i++)
        kill(-groups[i], SIGKILL);
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
        /* stdio and inherited descriptors stay as they are; the guard only
         * reads its pipe and never writes anywhere */
        guard_run(p[0]);
        _exit(0);
    }
    close(p[0]);
    g->pid = pid;
    g->fd = p[1];
    return 0;
}

static void guard_send(struct agent_task_guard *g, int32_t msg)
{
    if (g->fd < 0)
        return;
    ssize_t w;
    do
        w = write(g->fd, &msg, sizeof msg);
    while (w < 0 && errno == EINTR);
    if (w != (ssize_t)sizeof msg)
        log_warn("task guard: cannot write to its pipe: %s", strerror(errno));
}

void agent_task_guard_add(struct agent_task_guard *g, pid_t pgid)
{
    guard_send(g, (int32_t)pgid);
}

void agent_task_guard_remove(struct agent_task_guard *g, pid_t pgid)
{
    guard_send(g, -(int32_t)pgid);
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
