/*
 * The local provider: each node of a pool is a `tide agent` process of this
 * same binary on this machine, with fake GPUs of the pool's shape and its
 * work directory under DATA/pool-agents/NAME. Deleting a node sends its
 * process group SIGTERM (SIGKILL after 15 s); poll() reaps them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "providers/provider.h"

#define LOCAL_MAX_AGENTS 256
#define LOCAL_KILL_AFTER_MS 15000

struct local_agent {
    char name[TIDE_NAME_MAX];
    pid_t pid;
    int64_t term_ms; /* when SIGTERM was sent; 0 while wanted */
};

struct local_state {
    struct local_agent agents[LOCAL_MAX_AGENTS];
};

static struct local_state *state_of(struct provider *p)
{
    if (!p->state)
        p->state = calloc(1, sizeof(struct local_state));
    return p->state;
}

const struct provider_ops *provider_by_name(const char *name)
{
    if (!strcmp(name, "local"))
        return &provider_local_ops;
    if (!strcmp(name, "exec"))
        return &provider_exec_ops;
    return NULL;
}

void provider_fake_gpu_spec(const struct pool *pool, char *buf, size_t size)
{
    snprintf(buf, size, "%dx%s:%lldMiB", pool->gpus_per_node, pool->gpu_model,
             (long long)pool->gpu_memory_mib);
}

static int start_agent(struct provider *p, const struct pool *pool, struct local_agent *slot,
                       const char *name, struct tide_err *err)
{
    char work[1024], log[1100], spec[160], faults[1100];
    snprintf(work, sizeof work, "%s/pool-agents/%s", p->env.data_dir, name);
    /* where a test injects faults into this node's fake GPUs (docs/health.md) */
    snprintf(faults, sizeof faults, "%s/fake-faults", work);
    snprintf(log, sizeof log, "%s.log", work);
    int rc = fs_mkdir_p(work, 0700);
    if (rc)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot create %s: %s", work, strerror(-rc));
    provider_fake_gpu_spec(pool, spec, sizeof spec);
    int log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot open %s: %s", log, strerror(errno));
    char interval[24];
    snprintf(interval, sizeof interval, "%lld",
             (long long)(pool->health_interval_s > 0 ? pool->health_interval_s : 60));
    /* the fixed flags; local pool nodes stand in for machines of the server's
     * own user, as tide up's agents do (their jobs run as that user, root
     * too); --prewarm-image IMAGE for each of the pool's images; then the
     * pool's health probe (docs/health.md), when it has one */
    char *argv[32 + 2 * POOL_MAX_IMAGES] = {
        "tide", "agent", "--server", p->env.server_url, "--token-file",
        p->env.join_token_path, "--name", (char *)name, "--work", work,
        "--fake-gpus", spec, "--pool", (char *)pool->name, "--fake-fault-file", faults,
        "--health-interval-s", interval};
    int n = 18;
    if (geteuid() == 0) {
        argv[n++] = "--job-user";
        argv[n++] = "root";
        argv[n++] = "--allow-root-jobs";
    }
    for (int i = 0; i < pool->nimages; i++) {
        argv[n++] = "--prewarm-image";
        argv[n++] = (char *)pool->images[i];
    }
    if (pool->health_command[0]) {
        argv[n++] = "--health-command";
        argv[n++] = (char *)pool->health_command;
    }
    argv[n] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(log_fd);
        return tide_err_set(err, TIDE_EIO, NULL, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
            _exit(126);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(log_fd);
    setpgid(pid, pid);
    memset(slot, 0, sizeof *slot);
    snprintf(slot->name, sizeof slot->name, "%s", name);
    slot->pid = pid;
    return 0;
}

static int local_create(struct provider *p, const struct pool *pool, struct provider_node *nodes,
                        int count, struct tide_err *err)
{
    struct local_state *s = state_of(p);
    if (!s)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    for (int i = 0; i < count; i++) {
        struct local_agent *slot = NULL;
        for (int k = 0; k < LOCAL_MAX_AGENTS && !slot; k++)
            if (!s->agents[k].pid)
                slot = &s->agents[k];
        if (!slot)
            return tide_err_set(err, TIDE_EIO, NULL, "local provider: at most %d agents",
                                LOCAL_MAX_AGENTS);
        int rc = start_agent(p, pool, slot, nodes[i].name, err);
        if (rc)
            return rc;
        snprintf(nodes[i].id, sizeof nodes[i].id, "pid-%d", (int)slot->pid);
    }
    return 0;
}

static int local_destroy(struct provider *p, const struct pool *pool,
                         const struct provider_node *node, struct tide_err *err)
{
    (void)pool;
    (void)err;
    struct local_state *s = state_of(p);
    for (int k = 0; s && k < LOCAL_MAX_AGENTS; k++)
        if (s->agents[k].pid && !s->agents[k].term_ms && !strcmp(s->agents[k].name, node->name)) {
            kill(-s->agents[k].pid, SIGTERM);
            s->agents[k].term_ms = clock_mono_ms();
        }
    return 0; /* an agent that is gone already is deleted */
}

static void local_poll(struct provider *p)
{
    struct local_state *s = p->state;
    for (int k = 0; s && k < LOCAL_MAX_AGENTS; k++) {
        struct local_agent *a = &s->agents[k];
        if (!a->pid)
            continue;
        int status;
        pid_t r = waitpid(a->pid, &status, WNOHANG);
        if (r == a->pid || (r < 0 && errno == ECHILD)) {
            a->pid = 0;
            continue;
        }
        if (a->term_ms && clock_mono_ms() - a->term_ms > LOCAL_KILL_AFTER_MS)
            kill(-a->pid, SIGKILL);
    }
}

static void local_shutdown(struct provider *p)
{
    struct local_state *s = p->state;
    if (!s)
        return;
    for (int k = 0; k < LOCAL_MAX_AGENTS; k++)
        if (s->agents[k].pid)
            kill(-s->agents[k].pid, SIGTERM);
    int64_t deadline = clock_mono_ms() + 10000;
    for (int k = 0; k < LOCAL_MAX_AGENTS; k++) {
        while (s->agents[k].pid) {
            int status;
            pid_t r = waitpid(s->agents[k].pid, &status, WNOHANG);
            if (r == s->agents[k].pid || (r < 0 && errno == ECHILD)) {
                s->agents[k].pid = 0;
            } else if (clock_mono_ms() > deadline) {
                kill(-s->agents[k].pid, SIGKILL);
                waitpid(s->agents[k].pid, &status, 0);
                s->agents[k].pid = 0;
            } else {
                clock_sleep_ms(50, NULL);
            }
        }
    }
    free(s);
    p->state = NULL;
}

const struct provider_ops provider_local_ops = {
    .name = "local",
    .blocking = false, /* instant: made on the pool thread, which also reaps */
    .create = local_create,
    .destroy = local_destroy,
    .poll = local_poll,
    .shutdown = local_shutdown,
};
