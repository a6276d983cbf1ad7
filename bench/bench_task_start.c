/*
 * make bench, agent start row: how long the agent takes to start one
 * heartbeat reply's worth of tasks (a wave of 8, one per GPU), from the
 * first agent_task_start until every child has exec'd, with the real start
 * path (job directory, log, cgroup where the machine has one, vfork, the
 * start handshake). "serial" waits for each child's handshake before the
 * next start, as the agent did before starts ran side by side; "parallel"
 * starts all and then reads the handshakes as they come, as the agent's
 * loop does. Prints per-task latency (start call -> exec'd) p50/p99, the
 * wave's time, and the CPU per task of the agent and of the task itself
 * (from its vfork to its kill: the pre-exec work, the exec and `sleep`'s
 * start). Never fails on speed.
 * --dir DIR puts the agent's work directory (job directories, logs) under
 * DIR instead of /tmp: on a filesystem where making a file or directory is
 * slow (ext4 without a journal looks past every inode freed in the last
 * 30 s), that is much of the agent's CPU per task.
 * Usage: bench_task_start [--rounds N] [--wave N] [--no-cgroups] [--dir DIR]
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/task.h"
#include "common/fsutil.h"

#define MAX_WAVE 64

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU of this process (RUSAGE_SELF) or of its reaped children, the tasks
 * from (v)fork to exit (RUSAGE_CHILDREN). */
static double cpu_ms(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp_double);
    size_t i = (size_t)(p / 100 * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

/* Blocks until t's handshake is answered (or 5 s pass). */
static void wait_confirmed(struct agent_task *t)
{
    while (agent_task_starting(t) && !agent_task_confirm(t)) {
        struct pollfd p = {.fd = agent_task_start_fd(t), .events = POLLIN};
        if (poll(&p, 1, 5000) <= 0)
            return;
    }
}

/* Kills and reaps a wave's tasks. */
static void end_wave(struct agent_task **tasks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        agent_task_stop(tasks[i], "bench", 0, SIGKILL, 0);
    for (size_t i = 0; i < n; i++) {
        while (tasks[i]->state == AGENT_TASK_RUNNING && !agent_task_poll(tasks[i], 1))
            usleep(1000);
        agent_task_destroy(tasks[i]);
    }
}

/* One mode over rounds waves; prints its row. */
static int run(const char *mode, bool serial, int rounds, int wave, const char *work,
               const struct agent_cgroups *cg, int64_t *next_job)
{
    double *lat = calloc((size_t)rounds * (size_t)wave, sizeof *lat);
    double *walls = calloc((size_t)rounds, sizeof *walls);
    if (!lat || !walls)
        return 1;
    size_t nlat = 0;
    double cpu = 0, task_cpu = 0;
    int failed = 0;
    char *argv[] = {"sleep", "1000", NULL};
    for (int r = 0; r < rounds; r++) {
        struct agent_task *tasks[MAX_WAVE];
        double began[MAX_WAVE];
        int gpu[MAX_WAVE];
        double t0 = now_ms(), c0 = cpu_ms(RUSAGE_SELF), k0 = cpu_ms(RUSAGE_CHILDREN);
        for (int i = 0; i < wave; i++) {
            gpu[i] = i;
            struct agent_task_spec spec = {.job_id = (*next_job)++,
                                           .attempt = 1,
                                           .command = argv,
                                           .gpus = &gpu[i],
                                           .ngpus = 1,
                                           .kill_grace_s = 0};
            struct agent_task_site site = {
                .work_dir = work, .visible_by_index = true, .cgroups = cg};
            struct tide_err err;
            tide_err_clear(&err);
            began[i] = now_ms();
            if (agent_task_start(&spec, &site, (int64_t)began[i], &tasks[i], &err) != 0) {
                fprintf(stderr, "start: %s\n", err.message);
                return 1;
            }
            if (serial) {
                wait_confirmed(tasks[i]);
                lat[nlat++] = now_ms() - began[i];
            }
        }
        if (!serial) {
            /* the loop's way: poll the open handshakes, read what answered */
            size_t left = (size_t)wave;
            bool done[MAX_WAVE] = {0};
            while (left) {
                struct pollfd p[MAX_WAVE];
                size_t np = 0;
                for (int i = 0; i < wave; i++)
                    if (!done[i] && agent_task_starting(tasks[i]))
                        p[np++] =
                            (struct pollfd){.fd = agent_task_start_fd(tasks[i]), .events = POLLIN};
                if (np && poll(p, (nfds_t)np, 5000) <= 0)
                    break;
                for (int i = 0; i < wave; i++) {
                    if (done[i] || (agent_task_starting(tasks[i]) && !agent_task_confirm(tasks[i])))
                        continue;
                    done[i] = true;
                    left--;
                    lat[nlat++] = now_ms() - began[i];
                }
            }
        }
        walls[r] = now_ms() - t0;
        cpu += cpu_ms(RUSAGE_SELF) - c0;
        for (int i = 0; i < wave; i++)
            failed += tasks[i]->state != AGENT_TASK_RUNNING;
        end_wave(tasks, (size_t)wave);
        task_cpu += cpu_ms(RUSAGE_CHILDREN) - k0;
    }
    printf("  %-8s start -> exec'd p50 %6.2f ms  p99 %6.2f ms   wave of %d: p50 %6.2f ms  max "
           "%6.2f ms   agent CPU %.2f ms/task, tasks' %.2f%s\n",
           mode, pct(lat, nlat, 50), pct(lat, nlat, 99), wave, pct(walls, (size_t)rounds, 50),
           pct(walls, (size_t)rounds, 100), cpu / ((double)rounds * wave),
           task_cpu / ((double)rounds * wave), failed ? "   (some failed to start!)" : "");
    free(lat);
    free(walls);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    int rounds = 30, wave = 8;
    bool cgroups = true;
    const char *under = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--wave") && i + 1 < argc)
            wave = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-cgroups"))
            cgroups = false;
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            under = argv[++i];
        else {
            fprintf(stderr,
                    "usage: bench_task_start [--rounds N] [--wave N] [--no-cgroups] [--dir DIR]\n");
            return argc > 1 && !strcmp(argv[1], "--help") ? 0 : 2;
        }
    }
    if (rounds < 1 || wave < 1 || wave > MAX_WAVE) {
        fprintf(stderr, "bench_task_start: --rounds at least 1, --wave 1 to %d\n", MAX_WAVE);
        return 2;
    }
    char work[4096];
    int w = snprintf(work, sizeof work, "%s/tide-bench-start-XXXXXX", under);
    if (w < 0 || (size_t)w >= sizeof work) {
        fprintf(stderr, "bench_task_start: --dir: too long\n");
        return 2;
    }
    if (!mkdtemp(work)) {
        fprintf(stderr, "bench_task_start: --dir %s: %s\n", under, strerror(errno));
        return 1;
    }
    struct agent_cgroups cg;
    memset(&cg, 0, sizeof cg);
    if (cgroups)
        agent_cgroups_detect(&cg);
    printf("  %d rounds of %d tasks (sleep), %s, work dir under %s\n", rounds, wave,
           cg.ops ? "each in its own cgroup" : "no cgroups", under);
    int64_t job = 1;
    int rc = run("serial", true, rounds, wave, work, &cg, &job);
    rc |= run("parallel", false, rounds, wave, work, &cg, &job);
    char cmd[sizeof work + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", work);
    return rc;
}
