/*
 * The exec provider: runs the pool's program as `PROG create POOL COUNT`,
 * `PROG delete NODE_ID` and `PROG list POOL` (docs/providers.md). The
 * program gets the server URL, the join token and the names the new nodes
 * must register with in its environment and prints JSON on stdout:
 * {"nodes": [{"id": "...", "name": "...", "state": "..."}]}. A non-zero
 * exit, a timeout or unreadable output is a failure (the pool loop retries
 * with backoff). Calls are blocking: the pool loop runs several at once on
 * worker threads, so nothing here is shared between calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/spawn_env.h"
#include "providers/provider.h"
#include "providers/provider_answer.h"

#define EXEC_TIMEOUT_MS 300000
/* a create of several nodes may make them one after another */
#define EXEC_TIMEOUT_PER_NODE_MS 60000
#define EXEC_OUTPUT_MAX (256 * 1024)
#define EXEC_STDERR_TAIL 512
#define EXEC_DRAIN_READS 64     /* reads of what an exited program left in its pipes */
#define EXEC_KILL_GRACE_MS 3000 /* from SIGTERM to SIGKILL when a call is stopped */
#define EXEC_POLL_MS 250        /* how soon a stopping server is noticed */

/* Stops the program's process group (SIGTERM, SIGKILL after the grace) and
 * reaps it; *status is its wait status. */
static void stop_program(pid_t pid, int *status)
{
    kill(-pid, SIGTERM);
    int64_t deadline = clock_mono_ms() + EXEC_KILL_GRACE_MS;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return;
        if (clock_mono_ms() >= deadline)
            break;
        clock_sleep_ms(50, NULL);
    }
    kill(-pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

/* Waits for the program to exit once its output closed: it may run on
 * (a script that printed its answer and waits for its VM), and is held to
 * the same deadline and stop as while it wrote. 0 with *status, or an
 * error (the caller stops it). */
static int wait_program(pid_t pid, char *const argv[], int64_t deadline,
                        volatile int *stopping, int *status, struct tide_err *err)
{
    for (int64_t nap_ms = 1;; nap_ms = nap_ms < EXEC_POLL_MS / 5 ? nap_ms * 2 : nap_ms) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return tide_err_set(err, TIDE_EIO, NULL, "%s %s: wait: %s", argv[0], argv[1],
                                strerror(errno));
        if (clock_mono_ms() >= deadline)
            return tide_err_set(err, TIDE_EIO, NULL,
                                "%s %s: closed its output but did not exit in time", argv[0],
                                argv[1]);
        if (stopping && *stopping)
            return tide_err_set(err, TIDE_EIO, NULL, "%s %s: stopped, the server is stopping",
                                argv[0], argv[1]);
        clock_sleep_ms(nap_ms, NULL);
    }
}

/* What a program wrote: all of stdout, the end of stderr (for the error a
 * failure reports: "quota exceeded", not just "exit 1"). */
struct program_output {
    char *out;
    size_t len, cap;
    char err_tail[EXEC_STDERR_TAIL];
    size_t err_len;
};

/* Appends n bytes of stderr to o's tail, keeping its last bytes: the
 * program's last words are its reason. */
static void keep_tail(struct program_output *o, const char *bytes, size_t n)
{
    size_t keep = sizeof o->err_tail - 1;
    if (n >= keep) {
        memcpy(o->err_tail, bytes + n - keep, keep);
        o->err_len = keep;
    } else {
        size_t drop = o->err_len + n > keep ? o->err_len + n - keep : 0;
        memmove(o->err_tail, o->err_tail + drop, o->err_len - drop);
        memcpy(o->err_tail + o->err_len - drop, bytes, n);
        o->err_len = o->err_len - drop + n;
    }
    o->err_tail[o->err_len] = '\0';
}

enum { READ_MORE, READ_EOF, READ_NOTHING_NOW };

/* Reads what fd has into o (stdout, or stderr when is_err: passed on to the
 * server's own stderr, its end kept). READ_* or an error. */
static int read_some(int fd, bool is_err, struct program_output *o, const char *prog,
                     struct tide_err *err)
{
    char chunk[4096];
    if (!is_err && o->len + sizeof chunk + 1 > o->cap) {
        if (o->cap >= EXEC_OUTPUT_MAX)
            return tide_err_set(err, TIDE_EIO, NULL, "%s: output over %d bytes", prog,
                                EXEC_OUTPUT_MAX);
        size_t cap = o->cap ? o->cap * 2 : 8192;
        char *grown = realloc(o->out, cap);
        if (!grown)
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        o->out = grown;
        o->cap = cap;
    }
    ssize_t n = read(fd, is_err ? chunk : o->out + o->len, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return READ_NOTHING_NOW;
    if (n < 0)
        return tide_err_set(err, TIDE_EIO, NULL, "%s: read: %s", prog, strerror(errno));
    if (n == 0)
        return READ_EOF;
    if (!is_err) {
        o->len += (size_t)n;
        return READ_MORE;
    }
    if (write(STDERR_FILENO, chunk, (size_t)n) < 0) { /* the server's log, as before */
    }
    keep_tail(o, chunk, (size_t)n);
    return READ_MORE;
}

/* The last line of what the program said on stderr, for an error message
 * ("" when it said nothing). */
static const char *last_words(struct program_output *o)
{
    char *s = o->err_tail;
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
    char *line = strrchr(s, '\n');
    return line ? line + 1 : s;
}

/* Runs argv with extra environment entries (NAME=VALUE), collecting stdout,
 * until it exits (a child it left in the background holding stdout is not
 * waited for), timeout_ms pass or *stopping is set. Returns 0 or a
 * negative code; *out (malloc'ed, NUL-terminated) holds what it printed
 * either way, when it printed anything: a failed create may have made
 * nodes it names. */
static int run_program(char *const argv[], char *const extra_env[], int64_t timeout_ms,
                       volatile int *stopping, char **out, struct tide_err *err)
{
    *out = NULL;
    char **envp = spawn_env_build(extra_env);
    if (!envp)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    int fds[2], efds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        free(envp);
        return tide_err_set(err, TIDE_EIO, NULL, "pipe: %s", strerror(errno));
    }
    if (pipe2(efds, O_CLOEXEC) != 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        free(envp);
        return tide_err_set(err, TIDE_EIO, NULL, "pipe: %s", strerror(e));
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        close(efds[0]);
        close(efds[1]);
        free(envp);
        return tide_err_set(err, TIDE_EIO, NULL, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* the server ignores SIGPIPE, which exec keeps: `cli list | head`
         * in a script must end as in a shell */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigaction(SIGPIPE, &dfl, NULL);
        /* Only async-signal-safe calls here: the environment was built before fork. */
        int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(efds[1], 2) < 0)
            _exit(126);
        execvpe(argv[0], argv, envp);
        _exit(127);
    }
    free(envp);
    close(fds[1]);
    close(efds[1]);
    struct program_output o = {0};
    int64_t deadline = clock_mono_ms() + timeout_ms;
    int rc = 0, status = 0;
    bool out_open = true, err_open = true, exited = false;
    while (!rc && (out_open || err_open) && !exited) {
        struct pollfd pfd[2] = {{.fd = out_open ? fds[0] : -1, .events = POLLIN},
                                {.fd = err_open ? efds[0] : -1, .events = POLLIN}};
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0) {
            rc = tide_err_set(err, TIDE_EIO, NULL, "%s: no answer within %lld s", argv[0],
                              (long long)(timeout_ms / 1000));
            break;
        }
        if (stopping && *stopping) {
            rc = tide_err_set(err, TIDE_EIO, NULL, "%s %s: stopped, the server is stopping",
                              argv[0], argv[1]);
            break;
        }
        int r = poll(pfd, 2, (int)(left < EXEC_POLL_MS ? left : EXEC_POLL_MS));
        /* has it exited, leaving its output to a child (quiet or not)? */
        exited = waitpid(pid, &status, WNOHANG) == pid;
        for (int i = 0; i < 2 && !rc && r > 0; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int e = read_some(pfd[i].fd, i == 1, &o, argv[0], err);
            if (e < 0)
                rc = e;
            else if (e == READ_EOF && i == 0)
                out_open = false;
            else if (e == READ_EOF)
                err_open = false;
        }
    }
    if (exited) { /* what it wrote before it exited is in the pipes already */
        fcntl(fds[0], F_SETFL, O_NONBLOCK);
        fcntl(efds[0], F_SETFL, O_NONBLOCK);
        /* a few reads: a child that writes on must not keep the call */
        int e = READ_MORE;
        for (int n = 0; !rc && out_open && e == READ_MORE && n < EXEC_DRAIN_READS; n++)
            if ((e = read_some(fds[0], false, &o, argv[0], err)) < 0)
                rc = e;
        struct tide_err ignored; /* stderr is the reason's help, not its cause */
        e = READ_MORE;
        for (int n = 0; err_open && e == READ_MORE && n < EXEC_DRAIN_READS; n++)
            e = read_some(efds[0], true, &o, argv[0], &ignored);
    }
    close(fds[0]);
    close(efds[0]);
    if (!rc && !exited)
        rc = wait_program(pid, argv, deadline, stopping, &status, err);
    if (rc)
        stop_program(pid, &status);
    if (!rc && WIFEXITED(status) && WEXITSTATUS(status) == 127)
        rc = tide_err_set(err, TIDE_EIO, NULL, "%s: cannot run it", argv[0]);
    else if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        rc = tide_err_set(err, TIDE_EIO, NULL, "%s %s: %s %d%s%s", argv[0], argv[1],
                          WIFEXITED(status) ? "exit" : "signal",
                          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                          *last_words(&o) ? ": " : "", last_words(&o));
    if (o.out)
        o.out[o.len] = '\0';
    *out = o.out;
    return rc;
}

struct env_block {
    char server[1040], token[200], pool[100], names[4200], fake[200], gpus[64], model[100],
        mem[64], region[100], node[100], health[300], health_interval[64];
    char images[POOL_MAX_IMAGES * POOL_IMAGE_MAX + 32];
    char *list[14];
};

static void fill_env(struct env_block *e, struct provider *p, const struct pool *pool,
                     const struct provider_node *nodes, int count)
{
    char *token = NULL;
    if (fs_read_file(p->env.join_token_path, 4096, &token, NULL) == 0)
        token[strcspn(token, " \t\r\n")] = '\0';
    snprintf(e->server, sizeof e->server, "TIDE_SERVER=%s", p->env.server_url);
    snprintf(e->token, sizeof e->token, "TIDE_JOIN_TOKEN=%s", token ? token : "");
    free(token);
    snprintf(e->pool, sizeof e->pool, "TIDE_POOL=%s", pool->name);
    size_t used = (size_t)snprintf(e->names, sizeof e->names, "TIDE_NODE_NAMES=");
    for (int i = 0; i < count && used < sizeof e->names; i++)
        used += (size_t)snprintf(e->names + used, sizeof e->names - used, "%s%s", i ? " " : "",
                                 nodes[i].name);
    char spec[160];
    provider_fake_gpu_spec(pool, spec, sizeof spec);
    snprintf(e->fake, sizeof e->fake, "TIDE_FAKE_GPUS=%s", spec);
    snprintf(e->gpus, sizeof e->gpus, "TIDE_GPUS_PER_NODE=%d", pool->gpus_per_node);
    snprintf(e->model, sizeof e->model, "TIDE_GPU_MODEL=%s", pool->gpu_model);
    snprintf(e->mem, sizeof e->mem, "TIDE_GPU_MEMORY_MIB=%lld", (long long)pool->gpu_memory_mib);
    snprintf(e->region, sizeof e->region, "TIDE_REGION=%s", pool->region);
    snprintf(e->node, sizeof e->node, "TIDE_NODE_NAME=%s", count == 1 ? nodes[0].name : "");
    /* the pool's health probe, for the agent's --health-command (docs/health.md) */
    snprintf(e->health, sizeof e->health, "TIDE_HEALTH_COMMAND=%s", pool->health_command);
    snprintf(e->health_interval, sizeof e->health_interval, "TIDE_HEALTH_INTERVAL_S=%lld",
             (long long)(pool->health_interval_s > 0 ? pool->health_interval_s : 60));
    /* the pool's images, space-separated: the nodes' agents get them as
     * --prewarm-image flags */
    size_t at = (size_t)snprintf(e->images, sizeof e->images, "TIDE_PREWARM_IMAGES=");
    for (int i = 0; i < pool->nimages && at < sizeof e->images; i++)
        at += (size_t)snprintf(e->images + at, sizeof e->images - at, "%s%s", i ? " " : "",
                               pool->images[i]);
    char *list[] = {e->server, e->token, e->pool, e->names, e->fake, e->gpus, e->model,
                    e->mem, e->region, e->node, e->health, e->health_interval, e->images, NULL};
    memcpy(e->list, list, sizeof list);
}

static int exec_create(struct provider *p, const struct pool *pool, struct provider_node *nodes,
                       int count, struct tide_err *err)
{
    struct env_block env;
    fill_env(&env, p, pool, nodes, count);
    char count_s[16];
    snprintf(count_s, sizeof count_s, "%d", count);
    char *argv[] = {(char *)pool->program, "create", (char *)pool->name, count_s, NULL};
    char *out;
    int64_t timeout_ms = EXEC_TIMEOUT_MS + (int64_t)(count - 1) * EXEC_TIMEOUT_PER_NODE_MS;
    int rc = run_program(argv, env.list, timeout_ms, p->env.stopping, &out, err);
    rc = provider_answer_create(pool->program, pool->name, out, rc, nodes, count, err);
    free(out);
    return rc;
}

static int exec_destroy(struct provider *p, const struct pool *pool,
                        const struct provider_node *node, struct tide_err *err)
{
    struct env_block env;
    fill_env(&env, p, pool, node, 1);
    char *argv[] = {(char *)pool->program, "delete", (char *)(node->id[0] ? node->id : node->name),
                    NULL};
    char *out;
    int rc = run_program(argv, env.list, EXEC_TIMEOUT_MS, p->env.stopping, &out, err);
    free(out);
    return rc;
}

static int exec_list(struct provider *p, const struct pool *pool, struct provider_node *nodes,
                     int max, struct tide_err *err)
{
    struct env_block env;
    fill_env(&env, p, pool, NULL, 0);
    char *argv[] = {(char *)pool->program, "list", (char *)pool->name, NULL};
    char *out;
    int rc = run_program(argv, env.list, EXEC_TIMEOUT_MS, p->env.stopping, &out, err);
    if (rc) {
        free(out);
        return rc;
    }
    int n = provider_answer_list(pool->program, pool->name, out ? out : "", nodes, max, err);
    free(out);
    return n;
}

const struct provider_ops provider_exec_ops = {
    .name = "exec",
    .blocking = true,
    .create = exec_create,
    .destroy = exec_destroy,
    .list = exec_list,
    .poll = NULL,
    .shutdown = NULL,
};
