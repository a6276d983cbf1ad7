/*
 * cgroup v1 behind cgroup.h: the `memory` hierarchy, where the agent's
 * group (from /proc/self/cgroup) is a writable directory. Tasks get
 * memory.limit_in_bytes (and the same memory+swap limit where swap is
 * accounted); v1's cpu controller is not used, so there is no CPU quota.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cgroup.h"

static int v1_locate(const char *proc_cgroup, const char *mountinfo, char *dir, size_t n, char *why,
                     size_t why_n)
{
    char path[4096];
    if (agent_cgroup_parse_proc(proc_cgroup, "memory", path, sizeof path) != 0) {
        snprintf(why, why_n, "no memory line in /proc/self/cgroup");
        return TIDE_ENOENT;
    }
    int rc = agent_cgroup_find_mount(mountinfo, "cgroup", "memory", path, dir, n);
    if (rc == TIDE_EPERM)
        snprintf(why, why_n, "the memory hierarchy is mounted read-only");
    else if (rc != 0)
        snprintf(why, why_n, "no cgroup memory mount holds %s", path);
    return rc ? TIDE_ENOENT : 0;
}

static int v1_check(const char *dir, bool *cpu, char *why, size_t why_n)
{
    *cpu = false;
    char path[4200];
    snprintf(path, sizeof path, "%s/memory.limit_in_bytes", dir);
    if (access(path, W_OK) != 0) {
        snprintf(why, why_n, "%s: %s", path, strerror(errno));
        return TIDE_ENOENT;
    }
    return 0;
}

static int v1_set_limits(const char *path, const struct agent_cgroup_limits *lim, bool cpu,
                         char *why, size_t why_n)
{
    (void)cpu;
    if (lim->memory_mib <= 0)
        return 0;
    char value[64];
    if (agent_cgroup_format_memory(lim->memory_mib, value, sizeof value) != 0) {
        snprintf(why, why_n, "memory %lld MiB is out of range", (long long)lim->memory_mib);
        return TIDE_EINVAL;
    }
    int e = agent_cgroup_write(path, "memory.limit_in_bytes", value);
    if (e != 0) {
        snprintf(why, why_n, "memory.limit_in_bytes: %s", strerror(-e));
        return TIDE_EIO;
    }
    /* memory+swap no higher than memory: no swapping around the limit.
     * Absent without swap accounting, where there is nothing to stop. */
    e = agent_cgroup_write(path, "memory.memsw.limit_in_bytes", value);
    if (e != 0 && e != -ENOENT) {
        snprintf(why, why_n, "memory.memsw.limit_in_bytes: %s", strerror(-e));
        return TIDE_EIO;
    }
    return 0;
}

static int v1_oom_killed(const char *path, int leader_signal, bool *killed)
{
    char *text = NULL;
    int64_t n = 0;
    int e = agent_cgroup_read(path, "memory.oom_control", &text);
    if (e == 0 && agent_cgroup_read_key(text, "oom_kill", &n) == 0) {
        free(text);
        *killed = n > 0;
        return 0;
    }
    free(text);
    /* kernels before 4.13 count no OOM kills: the limit was hit and the
     * task died of SIGKILL, which is what the OOM killer sends */
    text = NULL;
    e = agent_cgroup_read(path, "memory.failcnt", &text);
    if (e != 0)
        return TIDE_EIO;
    n = strtoll(text, NULL, 10);
    free(text);
    *killed = n > 0 && leader_signal == SIGKILL;
    return 0;
}

const struct agent_cgroup_ops agent_cgroup_v1_ops = {
    .name = "v1",
    .locate = v1_locate,
    .check = v1_check,
    .set_limits = v1_set_limits,
    .oom_killed = v1_oom_killed,
    .join_file = "tasks",
};
