/*
 * cgroup v2 (the unified hierarchy) behind cgroup.h: usable when the
 * agent's own group has the memory controller enabled for its children in
 * cgroup.subtree_control (a delegated subtree); then tasks get memory.max,
 * no swap, whole-group OOM kills and, with the cpu controller, cpu.max.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cgroup.h"

static int v2_locate(const char *proc_cgroup, const char *mountinfo, char *dir, size_t n, char *why,
                     size_t why_n)
{
    char path[4096];
    if (agent_cgroup_parse_proc(proc_cgroup, NULL, path, sizeof path) != 0) {
        snprintf(why, why_n, "no 0:: line in /proc/self/cgroup");
        return TIDE_ENOENT;
    }
    int rc = agent_cgroup_find_mount(mountinfo, "cgroup2", NULL, path, dir, n);
    if (rc == TIDE_EPERM)
        snprintf(why, why_n, "cgroup2 is mounted read-only");
    else if (rc != 0)
        snprintf(why, why_n, "no cgroup2 mount holds %s", path);
    return rc ? TIDE_ENOENT : 0;
}

static int v2_check(const char *dir, bool *cpu, char *why, size_t why_n)
{
    char *sub = NULL;
    int e = agent_cgroup_read(dir, "cgroup.subtree_control", &sub);
    if (e != 0) {
        snprintf(why, why_n, "cannot read %s/cgroup.subtree_control: %s", dir, strerror(-e));
        return TIDE_ENOENT;
    }
    int rc = 0;
    if (!agent_cgroup_list_has(sub, "memory")) {
        size_t len = strcspn(sub, "\n");
        snprintf(why, why_n,
                 "the memory controller is not enabled in %s/cgroup.subtree_control (it has: "
                 "%.*s)",
                 dir, (int)(len > 200 ? 200 : len), len ? sub : "nothing");
        rc = TIDE_ENOENT;
    }
    *cpu = agent_cgroup_list_has(sub, "cpu");
    free(sub);
    return rc;
}

static int v2_set_limits(const char *path, const struct agent_cgroup_limits *lim, bool cpu,
                         char *why, size_t why_n)
{
    char value[64];
    if (lim->memory_mib > 0) {
        if (agent_cgroup_format_memory(lim->memory_mib, value, sizeof value) != 0) {
            snprintf(why, why_n, "memory %lld MiB is out of range", (long long)lim->memory_mib);
            return TIDE_EINVAL;
        }
        int e = agent_cgroup_write(path, "memory.max", value);
        if (e != 0) {
            snprintf(why, why_n, "memory.max: %s", strerror(-e));
            return TIDE_EIO;
        }
        /* a limit that swap can get around is not one; no swap controller
         * (the file is absent) means there is nothing to stop */
        e = agent_cgroup_write(path, "memory.swap.max", "0");
        if (e != 0 && e != -ENOENT) {
            snprintf(why, why_n, "memory.swap.max: %s", strerror(-e));
            return TIDE_EIO;
        }
    }
    /* a task is one job: the OOM killer ends all of it, not one process
     * that leaves the rest half-working (absent before Linux 4.19) */
    int e = agent_cgroup_write(path, "memory.oom.group", "1");
    (void)e;
    if (cpu && lim->cpus > 0) {
        if (agent_cgroup_format_cpu_max(lim->cpus, value, sizeof value) != 0) {
            snprintf(why, why_n, "cpus %d is out of range", lim->cpus);
            return TIDE_EINVAL;
        }
        e = agent_cgroup_write(path, "cpu.max", value);
        if (e != 0) {
            snprintf(why, why_n, "cpu.max: %s", strerror(-e));
            return TIDE_EIO;
        }
    }
    return 0;
}

static int v2_oom_killed(const char *path, int leader_signal, bool *killed)
{
    (void)leader_signal;
    char *events = NULL;
    int e = agent_cgroup_read(path, "memory.events", &events);
    if (e != 0)
        return TIDE_EIO;
    int64_t n = 0;
    *killed = agent_cgroup_read_key(events, "oom_kill", &n) == 0 && n > 0;
    free(events);
    return 0;
}

const struct agent_cgroup_ops agent_cgroup_v2_ops = {
    .name = "v2",
    .locate = v2_locate,
    .check = v2_check,
    .set_limits = v2_set_limits,
    .oom_killed = v2_oom_killed,
    .join_file = "cgroup.procs",
};
