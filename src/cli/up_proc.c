/* Starting, watching and stopping `tide up`'s children (see up_proc.h). */
#include "cli/up_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"

static sigset_t up_saved_mask;

static void up_ignore_signal(int sig)
{
    (void)sig;
}

int up_proc_init(sigset_t *set, struct tide_err *err)
{
    /* A handler (not SIG_IGN) so blocked signals stay pending; a shell
     * starting us in the background may have set SIGINT to SIG_IGN. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = up_ignore_signal;
    sigemptyset(&sa.sa_mask);
    sigemptyset(set);
    const int sigs[] = {SIGCHLD, SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return tide_err_set(err, TIDE_EIO, NULL, "sigaction: %s", strerror(errno));
        sigaddset(set, sigs[i]);
    }
    if (sigprocmask(SIG_BLOCK, set, &up_saved_mask) != 0)
        return tide_err_set(err, TIDE_EIO, NULL, "sigprocmask: %s", strerror(errno));
    return 0;
}

/* In the child between fork and exec: only async-signal-safe calls. */
static void up_child_exec(char *const argv[], int log_fd, pid_t parent)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigprocmask(SIG_SETMASK, &up_saved_mask, NULL);
    /* Own group: a Ctrl-C at the terminal reaches only `tide up`, which then
     * stops agents before the server. */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(1);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
        _exit(126);
    execv("/proc/self/exe", argv);
    static const char msg[] = "tide up: cannot exec /proc/self/exe\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
}

int up_child_start(struct up_child *ch, const char *name, char *const argv[],
                   const char *log_path, struct tide_err *err)
{
    memset(ch, 0, sizeof *ch);
    snprintf(ch->name, sizeof ch->name, "%s", name);
    if (snprintf(ch->log_path, sizeof ch->log_path, "%s", log_path) >= (int)sizeof ch->log_path)
        return tide_err_set(err, TIDE_EINVAL, NULL, "log path too long: %s", log_path);
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log_fd < 0)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot open %s: %s", log_path, strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(log_fd);
        return tide_err_set(err, TIDE_EIO, NULL, "cannot start %s: fork: %s", name, strerror(e));
    }
    if (pid == 0)
        up_child_exec(argv, log_fd, parent);
    close(log_fd);
    /* Also from the parent, so the group exists before we might signal it. */
    setpgid(pid, pid);
    ch->pid = pid;
    ch->running = 1;
    return 0;
}

int up_child_reap(struct up_child *ch)
{
    if (!ch->running)
        return 1;
    int status;
    pid_t r = waitpid(ch->pid, &status, WNOHANG);
    if (r == ch->pid || (r < 0 && errno == ECHILD)) {
        ch->running = 0;
        ch->status = r == ch->pid ? status : 0;
        return 1;
    }
    return 0;
}

void up_child_describe_exit(const struct up_child *ch, char *buf, size_t size)
{
    if (WIFEXITED(ch->status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(ch->status));
    else if (WIFSIGNALED(ch->status))
        snprintf(buf, size, "was killed by signal %d (%s)", WTERMSIG(ch->status),
                 strsignal(WTERMSIG(ch->status)));
    else
        snprintf(buf, size, "ended");
}

static size_t up_count_running(struct up_child *chs, size_t n)
{
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
        if (!up_child_reap(&chs[i]))
            left++;
    return left;
}

int up_children_stop(struct up_child *chs, size_t n, int64_t grace_ms)
{
    for (size_t i = 0; i < n; i++)
        if (!up_child_reap(&chs[i]))
            kill(chs[i].pid, SIGTERM);
    int64_t deadline = clock_mono_ms() + grace_ms;
    while (up_count_running(chs, n) > 0 && clock_mono_ms() < deadline)
        clock_sleep_ms(50, NULL);
    int killed = 0;
    for (size_t i = 0; i < n; i++) {
        if (up_child_reap(&chs[i]))
            continue;
        kill(chs[i].pid, SIGKILL);
        killed++;
        int status;
        if (waitpid(chs[i].pid, &status, 0) == chs[i].pid)
            chs[i].status = status;
        chs[i].running = 0;
    }
    return killed;
}
