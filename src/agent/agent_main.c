/*
 * `tide agent`: the node agent. Parses flags, discovers GPUs, starts the
 * task guard, runs the loop until SIGTERM/SIGINT and frees everything.
 */
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/agent_images.h"
#include "agent/agent_loop.h"
#include "agent/agent_probe.h"
#include "agent/agent_node.h"
#include "agent/agent_opts.h"
#include "agent/gpu_fake.h"
#include "agent/leftovers.h"
#include "agent/log_spares.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "common/fsutil.h"
#include "common/http_client.h"
#include "common/log.h"

/* Signals seen; the loop stops on the first and kills at once on the second. */
static volatile sig_atomic_t agent_signals;

static void on_signal(int sig)
{
    (void)sig;
    if (agent_signals < 2)
        agent_signals++;
}

static int install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* no SA_RESTART: the loop's sleep should end when a signal comes */
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        return -errno;
    /* a dead guard or server socket must give EPIPE, not kill the agent */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static int open_gpus(struct agent *a)
{
    struct tide_err err;
    tide_err_clear(&err);
    if (a->opts->fake_gpus) {
        if (gpu_backend_open(&a->gpus, &gpu_fake_ops, a->opts->fake_gpus, a->opts->name, &err)) {
            fprintf(stderr, "tide agent: %s\n", err.message);
            return 2;
        }
    } else if (gpu_backend_open(&a->gpus, &gpu_nvml_ops, NULL, a->opts->name, &err) != 0) {
        /* a CPU-only node is still useful for gpus:0 jobs */
        log_warn("no GPUs: %s; registering with 0 GPUs", err.message);
        gpu_backend_init_empty(&a->gpus, "none");
    }
    if (a->opts->fake_fault_file)
        gpu_fake_watch_faults(&a->gpus, a->opts->fake_fault_file);
    a->telemetry = calloc(a->gpus.count ? a->gpus.count : 1, sizeof *a->telemetry);
    a->health = calloc(a->gpus.count ? a->gpus.count : 1, sizeof *a->health);
    if (!a->telemetry || !a->health) {
        log_error("out of memory");
        return 1;
    }
    return 0;
}

/* With jobs run as other users (the agent is root), they must pass through
 * WORK and WORK/jobs to their own directory (0700, theirs) without seeing
 * anything else: both 0711, node.json 0600, logs 0711 with 0600 files. */
static int open_work_dir(struct agent *a)
{
    char user[64];
    bool other = agent_run_as_default(a->opts, user, sizeof user);
    static const char *const subdirs[] = {"jobs", "logs"};
    mode_t mode = other ? 0711 : 0700;
    if (chmod(a->work_dir, mode) != 0)
        log_warn("chmod %s: %s", a->work_dir, strerror(errno));
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", a->work_dir, subdirs[i]);
        int e = fs_mkdir_p(path, mode);
        if (e == 0 && chmod(path, mode) != 0)
            e = -errno;
        if (e != 0) {
            log_error("cannot create %s: %s", path, strerror(-e));
            return 1;
        }
    }
    char logs[PATH_MAX];
    snprintf(logs, sizeof logs, "%s/logs", a->work_dir);
    int spares = log_spares_clear(logs); /* an earlier run's, owners unknown */
    if (spares < 0)
        log_warn("cannot read %s: %s", logs, strerror(-spares));
    log_info("jobs run as %s%s", user, other && !a->opts->job_user ? " (no --job-user given)" : "");
    if (!other && (a->opts->job_user || a->opts->allow_users || a->opts->allow_root_jobs))
        log_warn("--job-user, --allow-users and --allow-root-jobs need an agent running as root; "
                 "jobs run as the agent's own user");
    return 0;
}

static int prepare_work_dir(struct agent *a)
{
    int e = fs_mkdir_p(a->opts->work_dir, 0700);
    if (e != 0) {
        log_error("cannot create work directory %s: %s", a->opts->work_dir, strerror(-e));
        return 1;
    }
    /* tasks chdir elsewhere, so every path handed to them is absolute */
    a->work_dir = realpath(a->opts->work_dir, NULL);
    if (!a->work_dir) {
        log_error("work directory %s: %s", a->opts->work_dir, strerror(errno));
        return 1;
    }
    return open_work_dir(a);
}

/* Before this agent reports to the server (which then gives the GPUs of
 * an earlier run's tasks away), kills what that run's tasks left behind.
 * A work dir that never ran a task is not looked for in /proc (every
 * process's environment read: agents that start beside running tasks paid
 * for theirs). */
static void kill_leftovers(struct agent *a)
{
    if (!agent_work_ran_tasks(a->work_dir))
        return;
    char jobs[PATH_MAX];
    snprintf(jobs, sizeof jobs, "%s/jobs", a->work_dir);
    int n = agent_leftovers_kill("/proc", jobs, -1);
    if (n)
        log_warn("killed %d process(es) left by the tasks of an earlier run of this agent", n);
}

/* Job directories made ahead, between waves of starts (dir_spares.h):
 * enough for every GPU to start a task twice over. */
static void start_job_dir_spares(struct agent *a)
{
    char jobs[PATH_MAX];
    snprintf(jobs, sizeof jobs, "%s/jobs", a->work_dir);
    size_t keep = 2 * a->gpus.count;
    keep = keep < 8 ? 8 : keep > 64 ? 64 : keep;
    a->job_dirs = dir_spares_create(jobs, (int)keep, 0700);
    if (!a->job_dirs)
        log_warn("no spare job directories (%s): each start makes its own", strerror(errno));
}

/* Job directories removed once kept --job-dir-keep-s (job_dir_sweep.h);
 * a thread, so after the guard's fork, and after the leftovers of an
 * earlier run were looked for by their directories. */
static void start_job_dir_sweep(struct agent *a)
{
    if (a->opts->job_dir_keep_s < 0)
        return;
    char jobs[PATH_MAX];
    snprintf(jobs, sizeof jobs, "%s/jobs", a->work_dir);
    a->job_dir_sweep = job_dir_sweep_create(jobs, a->opts->job_dir_keep_s);
    if (!a->job_dir_sweep)
        log_warn("job directories are kept for good: %s",
                 errno == ENOSYS ? "mount points cannot be told apart here (no mount ids from "
                                   "statx nor /proc/self/fdinfo)"
                                 : strerror(errno));
}

static void agent_release(struct agent *a)
{
    job_dir_sweep_destroy(a->job_dir_sweep);
    dir_spares_destroy(a->job_dirs);
    for (size_t i = 0; i < a->ntasks; i++)
        agent_task_destroy(a->tasks[i]);
    a->ntasks = 0;
    agent_task_guard_stop(&a->guard);
    gpu_backend_release(&a->gpus);
    agent_probe_release(&a->probe);
    free(a->telemetry);
    free(a->health);
    free(a->work_dir);
    agent_images_release(a);
    agent_node_release(&a->node);
}

/* Whether an http:// URL's host is a loopback name or address. */
static bool agent_server_is_local(const char *url)
{
    const char *host = url + 7;
    static const char *const names[] = {"localhost", "127.", "[::1]", NULL};
    for (int i = 0; names[i]; i++)
        if (!strncmp(host, names[i], strlen(names[i])))
            return true;
    return false;
}

int agent_main(int argc, char **argv)
{
    struct agent_opts opts;
    struct tide_err err;
    tide_err_clear(&err);
    if (agent_opts_parse(argc, argv, &opts, &err) != 0)
        return cli_usage_fail("agent", &err);
    if (opts.help) {
        agent_opts_usage(stdout);
        return 0;
    }
    if (http_client_set_ca(opts.ca, "--ca", &err) != 0 ||
        http_client_set_identity(opts.tls_cert, opts.tls_key, "--tls-cert", &err) != 0) {
        agent_opts_release(&opts);
        return cli_usage_fail("agent", &err);
    }
    log_set_prefix("agent");
    static struct agent a; /* large (task table); static keeps it off the stack */
    memset(&a, 0, sizeof a);
    a.opts = &opts;
    if (fs_random_hex(a.heartbeat_run, 16) != 0) /* numbering without it: the time will do */
        snprintf(a.heartbeat_run, sizeof a.heartbeat_run, "%llx", (unsigned long long)time(NULL));
    a.guard.fd = -1;
    if (agent_servers_init(&a.servers, opts.server_urls, opts.nservers) != 0) {
        log_error("cannot set up the server list");
        agent_opts_release(&opts);
        return 1;
    }
    /* GPUs first: a bad --fake-gpus should not leave a work dir behind */
    int rc = open_gpus(&a);
    if (rc == 0)
        rc = prepare_work_dir(&a);
    if (rc == 0 && install_signals() != 0) {
        log_error("cannot install signal handlers: %s", strerror(errno));
        rc = 1;
    }
    if (rc == 0) {
        agent_cgroups_detect(&a.cgroups); /* also empties groups of a dead agent */
        log_info("%s", a.cgroups.summary);
        kill_leftovers(&a);
        agent_images_start(&a, clock_mono_ms());
    }
    /* the guard forks without exec, so start it before libcurl (https://
     * servers only) may have threads */
    if (rc == 0 && (rc = agent_task_guard_start(&a.guard)) != 0) {
        log_error("cannot start the task guard: %s", strerror(-rc));
        rc = 1;
    }
    if (rc == 0 && http_client_global_init() != 0) {
        log_error("cannot initialise the HTTP client (libcurl, for https://)");
        rc = 1;
    }
    if (rc == 0) {
        start_job_dir_spares(&a); /* threads: after the guard's fork */
        start_job_dir_sweep(&a);
    }
    if (rc == 0) {
        log_info("node %s, work dir %s, %zu GPU(s) (%s), server %s%s%s", opts.name, a.work_dir,
                 a.gpus.count, a.gpus.driver, opts.server_url, opts.ca ? ", CA " : "",
                 opts.ca ? opts.ca : "");
        for (size_t i = 0; i < opts.nservers; i++)
            if (!strncmp(opts.server_urls[i], "http://", 7) &&
                !agent_server_is_local(opts.server_urls[i]))
                log_warn("%s is plain HTTP: the join and node tokens and job commands cross the "
                         "network in clear text; use an https:// server (docs/api.md, \"TLS\")",
                         opts.server_urls[i]);
        rc = agent_loop_run(&a, &agent_signals);
        /* no curl_global_cleanup (https://): the long-poll thread (agent_wake.h) may
         * still be inside a request, and the process is about to exit */
    }
    agent_release(&a);
    agent_servers_release(&a.servers);
    agent_opts_release(&opts);
    return rc;
}
