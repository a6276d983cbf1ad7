/*
 * GPU device isolation (cgroup.h): a bare task may open only the NVIDIA
 * GPUs it was given. CUDA_VISIBLE_DEVICES only steers CUDA; a task that
 * unsets it, or opens /dev/nvidiaN itself, would reach every GPU of the
 * node. The kernel refuses the others' device minors (major 195) to the
 * task's group: on cgroup v1 through a group of its own in the devices
 * hierarchy (devices.deny), on v2 through a cgroup device program attached
 * to its group. nvidiactl (195:255) and the other NVIDIA devices stay open:
 * CUDA needs them, and they reach no GPU by themselves.
 */
#include "agent/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NVIDIA_MAJOR 195
/* Most minors one device program names (a node has at most this many GPUs
 * that matter; the program grows by one instruction per minor). */
#define BPF_MAX_DENY 512

/* --- v2: a cgroup device program --- */

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    return (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

/* The program: a char device of major 195 whose minor is in deny gets 0
 * (refused), anything else 1. Returns its length in out. */
static size_t build_program(const int *deny, size_t n, struct bpf_insn *out)
{
    size_t k = 0;
    /* r2 = device type (the low half of access_type), r3 = major, r4 = minor */
    out[k++] =
        insn(BPF_LDX | BPF_MEM | BPF_W, 2, 1, offsetof(struct bpf_cgroup_dev_ctx, access_type), 0);
    out[k++] = insn(BPF_ALU64 | BPF_AND | BPF_K, 2, 0, 0, 0xffff);
    out[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, 3, 1, offsetof(struct bpf_cgroup_dev_ctx, major), 0);
    out[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, 4, 1, offsetof(struct bpf_cgroup_dev_ctx, minor), 0);
    /* jumps count from the next instruction; "allow" is the last two */
    size_t allow = 4 + 2 + n + 1 + 2;
    out[k] = insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, (int16_t)(allow - k - 1), BPF_DEVCG_DEV_CHAR);
    k++;
    out[k] = insn(BPF_JMP | BPF_JNE | BPF_K, 3, 0, (int16_t)(allow - k - 1), NVIDIA_MAJOR);
    k++;
    size_t refuse = allow - 2;
    for (size_t i = 0; i < n; i++, k++)
        out[k] = insn(BPF_JMP | BPF_JEQ | BPF_K, 4, 0, (int16_t)(refuse - k - 1), deny[i]);
    out[k] = insn(BPF_JMP | BPF_JA, 0, 0, (int16_t)(allow - k - 1), 0);
    k++;
    out[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0); /* refuse */
    out[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    out[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1); /* allow */
    out[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    return k;
}

/* Loads the program for deny[0..n) and attaches it to the group at path
 * (beside its parents' programs: all must allow). 0 or -errno. */
static int attach_program(const char *path, const int *deny, size_t n)
{
    if (n > BPF_MAX_DENY)
        return -E2BIG;
    static struct bpf_insn prog[BPF_MAX_DENY + 16];
    size_t len = build_program(deny, n, prog);
    union bpf_attr load;
    memset(&load, 0, sizeof load);
    load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    load.insns = (uint64_t)(uintptr_t)prog;
    load.insn_cnt = (uint32_t)len;
    load.license = (uint64_t)(uintptr_t) "GPL"; /* the kernel's tag; no helper is called */
    int prog_fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof load);
    if (prog_fd < 0)
        return -errno;
    int dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = dir_fd < 0 ? -errno : 0;
    if (!e) {
        union bpf_attr at;
        memset(&at, 0, sizeof at);
        at.target_fd = (uint32_t)dir_fd;
        at.attach_bpf_fd = (uint32_t)prog_fd;
        at.attach_type = BPF_CGROUP_DEVICE;
        at.attach_flags = BPF_F_ALLOW_MULTI;
        if (syscall(SYS_bpf, BPF_PROG_ATTACH, &at, sizeof at) != 0)
            e = -errno;
        close(dir_fd);
    }
    close(prog_fd); /* the attachment holds it until the group is removed */
    return e;
}

/* --- v1: a group in the devices hierarchy --- */

/* The task's group there: "<devices_dir>/<prefix><job>-<attempt>". */
static int v1_create(struct agent_cgroup *g, int64_t job_id, int64_t attempt, const int *deny,
                     size_t n, char *why, size_t why_n)
{
    const struct agent_cgroups *cg = g->site;
    if (asprintf(&g->devices_path, "%s/%s%" PRId64 "-%" PRId64, cg->devices_dir, cg->prefix, job_id,
                 attempt) < 0) {
        g->devices_path = NULL;
        snprintf(why, why_n, "out of memory");
        return TIDE_ENOMEM;
    }
    if (mkdir(g->devices_path, 0755) != 0 && errno != EEXIST) {
        snprintf(why, why_n, "cannot create %.700s: %s", g->devices_path, strerror(errno));
        free(g->devices_path);
        g->devices_path = NULL;
        return TIDE_EIO;
    }
    for (size_t i = 0; i < n; i++) {
        char rule[48];
        snprintf(rule, sizeof rule, "c %d:%d rwm", NVIDIA_MAJOR, deny[i]);
        int e = agent_cgroup_write(g->devices_path, "devices.deny", rule);
        if (e) {
            snprintf(why, why_n, "%.700s/devices.deny: %s", g->devices_path, strerror(-e));
            return TIDE_EIO;
        }
    }
    char tasks[PATH_MAX];
    snprintf(tasks, sizeof tasks, "%s/tasks", g->devices_path);
    g->devices_fd = open(tasks, O_WRONLY | O_CLOEXEC);
    if (g->devices_fd < 0) {
        snprintf(why, why_n, "cannot open %.700s: %s", tasks, strerror(errno));
        return TIDE_EIO;
    }
    return 0;
}

int agent_cgroup_devices_apply(struct agent_cgroup *g, int64_t job_id, int64_t attempt,
                               const struct agent_cgroup_limits *lim, char *why, size_t why_n)
{
    if (!lim->ndeny || g->site->devices == AGENT_DEVICES_NONE)
        return 0;
    if (g->site->devices == AGENT_DEVICES_V1)
        return v1_create(g, job_id, attempt, lim->deny_minors, lim->ndeny, why, why_n);
    int e = attach_program(g->path, lim->deny_minors, lim->ndeny);
    if (e)
        snprintf(why, why_n, "cannot attach a device program to %.700s: %s", g->path, strerror(-e));
    return e ? TIDE_EIO : 0;
}

int agent_cgroup_devices_remove(struct agent_cgroup *g)
{
    if (g->devices_fd >= 0) {
        close(g->devices_fd);
        g->devices_fd = -1;
    }
    if (!g->devices_path)
        return 0;
    /* its task is gone: the group of its memory hierarchy was emptied first */
    if (rmdir(g->devices_path) != 0 && errno != ENOENT)
        return -errno;
    free(g->devices_path);
    g->devices_path = NULL;
    return 0;
}

/* --- finding what the machine offers --- */

static bool v1_found(struct agent_cgroups *cg, const char *proc_cgroup, const char *mountinfo,
                     bool probe, char *why, size_t why_n)
{
    char path[4096], dir[sizeof cg->devices_dir];
    if (agent_cgroup_parse_proc(proc_cgroup, "devices", path, sizeof path) != 0) {
        snprintf(why, why_n, "no devices line in /proc/self/cgroup");
        return false;
    }
    if (agent_cgroup_find_mount(mountinfo, "cgroup", "devices", path, dir, sizeof dir) != 0) {
        snprintf(why, why_n, "no writable devices hierarchy holds %.700s", path);
        return false;
    }
    if (probe) {
        char group[PATH_MAX + 64];
        snprintf(group, sizeof group, "%s/%sprobe", dir, cg->prefix);
        if (mkdir(group, 0755) != 0 && errno != EEXIST) {
            snprintf(why, why_n, "cannot create a group in %.700s: %s", dir, strerror(errno));
            return false;
        }
        int e = agent_cgroup_write(group, "devices.deny", "c 195:254 rwm");
        rmdir(group);
        if (e) {
            snprintf(why, why_n, "%.700s: devices.deny: %s", dir, strerror(-e));
            return false;
        }
    }
    snprintf(cg->devices_dir, sizeof cg->devices_dir, "%s", dir);
    return true;
}

static bool bpf_found(const struct agent_cgroups *cg, bool probe, char *why, size_t why_n)
{
    if (!probe)
        return true;
    char group[PATH_MAX + 64];
    snprintf(group, sizeof group, "%s/%sprobe", cg->dir, cg->prefix);
    if (mkdir(group, 0755) != 0 && errno != EEXIST) {
        snprintf(why, why_n, "cannot create a group in %.700s: %s", cg->dir, strerror(errno));
        return false;
    }
    int none = 254; /* a minor no GPU has: the probe denies nothing real */
    int e = attach_program(group, &none, 1);
    rmdir(group);
    if (e)
        snprintf(why, why_n, "no cgroup device program: %s", strerror(-e));
    return e == 0;
}

void agent_cgroup_devices_detect(struct agent_cgroups *cg, const char *proc_cgroup,
                                 const char *mountinfo, bool probe, char *why, size_t why_n)
{
    cg->devices = AGENT_DEVICES_NONE;
    cg->devices_dir[0] = '\0';
    why[0] = '\0';
    if (cg->ops == &agent_cgroup_v1_ops && v1_found(cg, proc_cgroup, mountinfo, probe, why, why_n))
        cg->devices = AGENT_DEVICES_V1;
    else if (cg->ops == &agent_cgroup_v2_ops && bpf_found(cg, probe, why, why_n))
        cg->devices = AGENT_DEVICES_BPF;
}
