/* Running the health probe beside the heartbeat loop (agent_probe.h). */
#include "agent/agent_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/utf8.h"

#define PROBE_OUTPUT_READ_MAX (64 * 1024)

static void last_line(const char *path, char *out, size_t size)
{
    char *text = NULL;
    out[0] = '\0';
    if (fs_read_file(path, PROBE_OUTPUT_READ_MAX, &text, NULL) != 0)
        return;
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
        text[--n] = '\0';
    char *start = strrchr(text, '\n');
    /* a line cut inside a character would make the heartbeat's JSON fail */
    utf8_copy(out, size, start ? start + 1 : text);
    free(text);
}

static void finish(struct agent_probe *p, bool ok, const char *output, int interval_s,
                   int64_t now_ms)
{
    bool changed = !p->has_result || p->ok != ok;
    p->pid = 0;
    p->has_result = true;
    p->ok = ok;
    utf8_copy(p->output, sizeof p->output, output);
    p->next_ms = now_ms + (int64_t)interval_s * 1000;
    p->runs++;
    if (changed)
        log_info("health probe %s: %s", ok ? "passed" : "failed", output[0] ? output : "(no output)");
}

static void start(struct agent_probe *p, const char *command, const char *out_path,
                  int interval_s, int64_t now_ms)
{
    pid_t pid = fork();
    if (pid < 0) {
        char why[96];
        snprintf(why, sizeof why, "cannot start: %s", strerror(errno));
        finish(p, false, why, interval_s, now_ms);
        return;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    p->pid = pid;
    p->started_ms = now_ms;
}

bool agent_probe_tick(struct agent_probe *p, const char *command, int interval_s, int timeout_s,
                      const char *out_path, int64_t now_ms)
{
    if (!command)
        return false;
    if (!p->pid) {
        if (p->runs && now_ms < p->next_ms)
            return false;
        start(p, command, out_path, interval_s, now_ms);
        return p->pid == 0; /* it could not start: that is a result */
    }
    int status;
    pid_t r = waitpid(p->pid, &status, WNOHANG);
    char out[AGENT_PROBE_OUTPUT_MAX], why[AGENT_PROBE_OUTPUT_MAX + 48];
    if (r == p->pid) {
        last_line(out_path, out, sizeof out);
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && !out[0])
            snprintf(out, sizeof out, WIFEXITED(status) ? "exit %d" : "signal %d",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        finish(p, ok, out, interval_s, now_ms);
        return true;
    }
    if (r < 0 && errno != EINTR) {
        finish(p, false, "lost track of the probe", interval_s, now_ms);
        return true;
    }
    if (now_ms - p->started_ms < (int64_t)timeout_s * 1000)
        return false;
    kill(-p->pid, SIGKILL);
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    last_line(out_path, out, sizeof out);
    snprintf(why, sizeof why, "timed out after %ds%s%s", timeout_s, out[0] ? ": " : "", out);
    utf8_trim_tail(why);
    why[AGENT_PROBE_OUTPUT_MAX - 1] = '\0';
    finish(p, false, why, interval_s, now_ms);
    return true;
}

void agent_probe_release(struct agent_probe *p)
{
    if (!p->pid)
        return;
    kill(-p->pid, SIGKILL);
    int status;
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    p->pid = 0;
}
