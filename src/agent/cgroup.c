/*
 * What cgroup v1 and v2 share (cgroup.h): detecting which one the machine
 * offers, parsing /proc/self/cgroup and mountinfo, and the life of one
 * task's group (create, join between vfork and exec, empty, remove).
 */
#include "agent/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"

#define CGROUP_FILE_MAX (64 * 1024)
#define CGROUP_PROC_MAX (1024 * 1024) /* mountinfo can be long in containers */
/* Emptying a group: tries, and the pause between them. */
#define REMOVE_TRIES 40
#define REMOVE_PAUSE_MS 5

/* The next line of *text (without its newline) as [*line, *len); false at
 * the end. */
static bool next_line(const char **text, const char **line, size_t *len)
{
    if (!**text)
        return false;
    const char *nl = strchr(*text, '\n');
    *line = *text;
    *len = nl ? (size_t)(nl - *text) : strlen(*text);
    *text = nl ? nl + 1 : *text + *len;
    return true;
}

/* Whether word is one of the sep-separated items in [s, s + len). */
static bool has_item(const char *s, size_t len, const char *word, char sep)
{
    size_t wl = strlen(word);
    const char *end = s + len;
    while (s < end) {
        const char *e = memchr(s, sep, (size_t)(end - s));
        size_t il = e ? (size_t)(e - s) : (size_t)(end - s);
        if (il == wl && !memcmp(s, word, wl))
            return true;
        s += il + 1;
    }
    return false;
}

int agent_cgroup_parse_proc(const char *text, const char *controller, char *path, size_t n)
{
    const char *line;
    size_t len;
    while (next_line(&text, &line, &len)) {
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (!c2)
            continue;
        const char *ctl = c1 + 1;
        size_t ctl_len = (size_t)(c2 - ctl);
        bool match = controller ? has_item(ctl, ctl_len, controller, ',')
                                : (c1 - line == 1 && line[0] == '0' && ctl_len == 0);
        if (!match)
            continue;
        size_t plen = len - (size_t)(c2 + 1 - line);
        if (plen + 1 > n)
            return TIDE_ETOOBIG;
        memcpy(path, c2 + 1, plen);
        path[plen] = '\0';
        return 0;
    }
    return TIDE_ENOENT;
}

/* Copies the mountinfo field [s, s + len) into out, turning \ooo escapes
 * back into bytes. False when it does not fit. */
static bool unescape(const char *s, size_t len, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
            s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            c = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        }
        if (k + 1 >= n)
            return false;
        out[k++] = c;
    }
    out[k] = '\0';
    return true;
}

/* Splits [line, line + len) at spaces into at most max fields. */
static size_t split_fields(const char *line, size_t len, const char **f, size_t *fl, size_t max)
{
    size_t nf = 0;
    const char *end = line + len;
    while (line < end && nf < max) {
        while (line < end && *line == ' ')
            line++;
        if (line >= end)
            break;
        const char *sp = memchr(line, ' ', (size_t)(end - line));
        f[nf] = line;
        fl[nf] = sp ? (size_t)(sp - line) : (size_t)(end - line);
        line += fl[nf];
        nf++;
    }
    return nf;
}

int agent_cgroup_find_mount(const char *mountinfo, const char *fstype, const char *option,
                            const char *cgpath, char *dir, size_t n)
{
    if (cgpath[0] != '/' || strstr(cgpath, "/.."))
        return TIDE_ENOENT; /* outside our cgroup namespace: not reachable */
    int found = TIDE_ENOENT;
    const char *line;
    size_t len;
    while (next_line(&mountinfo, &line, &len)) {
        const char *f[64];
        size_t fl[64];
        size_t nf = split_fields(line, len, f, fl, 64);
        /* id parent maj:min root mountpoint options [optional...] - fstype source super */
        size_t dash = 6;
        while (dash < nf && !(fl[dash] == 1 && f[dash][0] == '-'))
            dash++;
        if (nf < 6 || dash + 1 >= nf)
            continue;
        if (fl[dash + 1] != strlen(fstype) || memcmp(f[dash + 1], fstype, fl[dash + 1]))
            continue;
        if (option && (dash + 3 >= nf || !has_item(f[dash + 3], fl[dash + 3], option, ',')))
            continue;
        char root[PATH_MAX], point[PATH_MAX];
        if (!unescape(f[3], fl[3], root, sizeof root) ||
            !unescape(f[4], fl[4], point, sizeof point))
            continue;
        size_t rl = strlen(root);
        const char *rest;
        if (!strcmp(root, "/"))
            rest = cgpath;
        else if (!strncmp(cgpath, root, rl) && (cgpath[rl] == '\0' || cgpath[rl] == '/'))
            rest = cgpath + rl;
        else
            continue;
        if (!has_item(f[5], fl[5], "rw", ',')) {
            found = TIDE_EPERM;
            continue;
        }
        if (!strcmp(rest, "/"))
            rest = "";
        int w = snprintf(dir, n, "%s%s", point, rest);
        if (w < 0 || (size_t)w >= n)
            return TIDE_ETOOBIG;
        return 0;
    }
    return found;
}

int agent_cgroup_read_key(const char *text, const char *key, int64_t *out)
{
    size_t kl = strlen(key);
    const char *line;
    size_t len;
    while (next_line(&text, &line, &len)) {
        if (len > kl && !memcmp(line, key, kl) && line[kl] == ' ') {
            char num[32];
            size_t nl = len - kl - 1;
            if (nl == 0 || nl >= sizeof num)
                return TIDE_ENOENT;
            memcpy(num, line + kl + 1, nl);
            num[nl] = '\0';
            char *end;
            errno = 0;
            long long v = strtoll(num, &end, 10);
            if (errno || end == num || (*end && *end != ' '))
                return TIDE_ENOENT;
            *out = v;
            return 0;
        }
    }
    return TIDE_ENOENT;
}

bool agent_cgroup_list_has(const char *list, const char *word)
{
    size_t len = strlen(list);
    while (len && (list[len - 1] == '\n' || list[len - 1] == ' '))
        len--;
    return has_item(list, len, word, ' ');
}

int agent_cgroup_format_memory(int64_t memory_mib, char *buf, size_t n)
{
    if (memory_mib <= 0 || memory_mib > (INT64_MAX >> 20))
        return TIDE_EINVAL;
    int w = snprintf(buf, n, "%" PRId64, memory_mib << 20);
    return w < 0 || (size_t)w >= n ? TIDE_EINVAL : 0;
}

int agent_cgroup_format_cpu_max(int cpus, char *buf, size_t n)
{
    if (cpus < 0 || cpus > 1000000)
        return TIDE_EINVAL;
    int w = cpus ? snprintf(buf, n, "%lld 100000", (long long)cpus * 100000)
                 : snprintf(buf, n, "max 100000");
    return w < 0 || (size_t)w >= n ? TIDE_EINVAL : 0;
}

int agent_cgroup_write(const char *dir, const char *file, const char *value)
{
    char path[PATH_MAX];
    int w = snprintf(path, sizeof path, "%s/%s", dir, file);
    if (w < 0 || (size_t)w >= sizeof path)
        return -ENAMETOOLONG;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = strlen(value);
    ssize_t r = write(fd, value, len);
    int e = r < 0 ? -errno : (size_t)r != len ? -EIO : 0;
    if (close(fd) != 0 && e == 0)
        e = -errno;
    return e;
}

int agent_cgroup_read(const char *dir, const char *file, char **out)
{
    char path[PATH_MAX];
    int w = snprintf(path, sizeof path, "%s/%s", dir, file);
    if (w < 0 || (size_t)w >= sizeof path)
        return -ENAMETOOLONG;
    size_t len;
    return fs_read_file(path, CGROUP_FILE_MAX, out, &len);
}

static void pause_ms(long ms)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* SIGKILLs every process in the group at path. */
static void kill_members(const char *path)
{
    /* v2 since Linux 5.14 kills the whole group at once; elsewhere absent */
    int e = agent_cgroup_write(path, "cgroup.kill", "1");
    (void)e;
    char *procs = NULL;
    if (agent_cgroup_read(path, "cgroup.procs", &procs) != 0)
        return;
    const char *text = procs, *line;
    size_t len;
    while (next_line(&text, &line, &len)) {
        long pid = strtol(line, NULL, 10);
        if (pid > 0 && pid != (long)getpid())
            kill((pid_t)pid, SIGKILL);
    }
    free(procs);
}

/* Empties and removes the group directory at path. 0 or -errno. */
static int remove_dir(const char *path)
{
    for (int i = 0; i < REMOVE_TRIES; i++) {
        if (rmdir(path) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -errno;
        kill_members(path);
        pause_ms(REMOVE_PAUSE_MS);
    }
    return -EBUSY;
}

/* Removes the task groups of agents that are gone (killed with -9, say),
 * killing what still runs in them first: a task's processes that escaped
 * its process group (setsid) would otherwise keep its GPUs. */
static void sweep_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "tide-", 5) != 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + 5, &end, 10);
        if (pid <= 0 || *end != '-' || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
            errno != ESRCH)
            continue;
        char path[PATH_MAX];
        int w = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (w > 0 && (size_t)w < sizeof path && remove_dir(path) == 0)
            removed++;
    }
    closedir(d);
    if (removed)
        log_info("cgroups: emptied and removed %d task group(s) of agents that are gone in %s",
                 removed, dir);
}

/* Creates and removes a group in dir, to learn whether the agent may. */
static int probe_dir(const struct agent_cgroups *cg, const char *dir, char *why, size_t why_n)
{
    char path[PATH_MAX];
    int w = snprintf(path, sizeof path, "%s/%sprobe", dir, cg->prefix);
    if (w < 0 || (size_t)w >= sizeof path) {
        snprintf(why, why_n, "%.700s: path too long", dir);
        return TIDE_ENOENT;
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(why, why_n, "cannot create a group in %.700s: %s", dir, strerror(errno));
        return TIDE_ENOENT;
    }
    if (remove_dir(path) != 0) {
        snprintf(why, why_n, "cannot remove the probe group %.700s", path);
        return TIDE_ENOENT;
    }
    return 0;
}

void agent_cgroups_detect_from(struct agent_cgroups *cg, const char *proc_cgroup,
                               const char *mountinfo, bool probe)
{
    memset(cg, 0, sizeof *cg);
    snprintf(cg->prefix, sizeof cg->prefix, "tide-%ld-", (long)getpid());
    const struct agent_cgroup_ops *order[] = {&agent_cgroup_v2_ops, &agent_cgroup_v1_ops};
    char why[2][1024];
    for (size_t i = 0; i < 2; i++) {
        const struct agent_cgroup_ops *ops = order[i];
        char dir[sizeof cg->dir];
        bool cpu = false;
        why[i][0] = '\0';
        if (ops->locate(proc_cgroup, mountinfo, dir, sizeof dir, why[i], sizeof why[i]) != 0 ||
            ops->check(dir, &cpu, why[i], sizeof why[i]) != 0 ||
            (probe && probe_dir(cg, dir, why[i], sizeof why[i]) != 0))
            continue;
        cg->ops = ops;
        cg->cpu = cpu;
        snprintf(cg->dir, sizeof cg->dir, "%s", dir);
        char devices_why[1024];
        agent_cgroup_devices_detect(cg, proc_cgroup, mountinfo, probe, devices_why,
                                    sizeof devices_why);
        char devices[1200];
        if (cg->devices == AGENT_DEVICES_V1)
            snprintf(devices, sizeof devices, "GPUs not given are closed to them (devices.deny)");
        else if (cg->devices == AGENT_DEVICES_BPF)
            snprintf(devices, sizeof devices, "GPUs not given are closed to them (device program)");
        else
            snprintf(devices, sizeof devices, "GPUs not given stay open to them (%s)", devices_why);
        snprintf(cg->summary, sizeof cg->summary,
                 "cgroup %s at %s: tasks get memory limits%s%s%s%s; %s", ops->name, dir,
                 cpu ? " and CPU quotas" : ", no CPU quotas", i ? " (v2 not used: " : "",
                 i ? why[0] : "", i ? ")" : "", devices);
        if (probe)
            sweep_stale(cg->dir);
        if (probe && cg->devices == AGENT_DEVICES_V1)
            sweep_stale(cg->devices_dir);
        return;
    }
    snprintf(cg->summary, sizeof cg->summary,
             "no usable cgroups (v2: %s; v1: %s): tasks run without memory or CPU limits", why[0],
             why[1]);
}

void agent_cgroups_detect(struct agent_cgroups *cg)
{
    char *proc = NULL, *mounts = NULL;
    size_t len;
    int e1 = fs_read_file("/proc/self/cgroup", CGROUP_PROC_MAX, &proc, &len);
    int e2 = e1 ? 0 : fs_read_file("/proc/self/mountinfo", CGROUP_PROC_MAX, &mounts, &len);
    if (e1 || e2) {
        memset(cg, 0, sizeof *cg);
        snprintf(cg->summary, sizeof cg->summary,
                 "no usable cgroups (cannot read %s: %s): tasks run without memory or CPU limits",
                 e1 ? "/proc/self/cgroup" : "/proc/self/mountinfo", strerror(-(e1 ? e1 : e2)));
    } else {
        agent_cgroups_detect_from(cg, proc, mounts, true);
    }
    free(proc);
    free(mounts);
}

int agent_cgroup_create(const struct agent_cgroups *cg, int64_t job_id, int64_t attempt,
                        const struct agent_cgroup_limits *lim, struct agent_cgroup **out,
                        struct tide_err *err)
{
    *out = NULL;
    if (!cg || !cg->ops)
        return tide_err_set(err, TIDE_EINVAL, NULL, "cgroups are not available");
    struct agent_cgroup *g = calloc(1, sizeof *g);
    if (!g ||
        asprintf(&g->path, "%s/%s%" PRId64 "-%" PRId64, cg->dir, cg->prefix, job_id, attempt) < 0) {
        free(g);
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    g->site = cg;
    g->procs_fd = -1;
    g->devices_fd = -1;
    int rc = 0;
    if (mkdir(g->path, 0755) != 0) {
        int e = errno;
        /* a group of an earlier run of this agent pid: replace it */
        if (e != EEXIST || remove_dir(g->path) != 0 || mkdir(g->path, 0755) != 0) {
            rc = tide_err_set(err, TIDE_EIO, NULL, "cannot create cgroup %s: %s", g->path,
                              strerror(e == EEXIST ? errno : e));
            free(g->path);
            free(g);
            return rc;
        }
    }
    char why[512] = "";
    rc = cg->ops->set_limits(g->path, lim, cg->cpu, why, sizeof why);
    if (rc != 0) {
        tide_err_set(err, rc, NULL, "cgroup %s: %s", g->path, why);
    } else {
        char procs[PATH_MAX];
        snprintf(procs, sizeof procs, "%s/%s", g->path, cg->ops->join_file);
        g->procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
        if (g->procs_fd < 0)
            rc = tide_err_set(err, TIDE_EIO, NULL, "cannot open %s: %s", procs, strerror(errno));
    }
    if (rc == 0 && (rc = agent_cgroup_devices_apply(g, job_id, attempt, lim, why, sizeof why)) != 0)
        tide_err_set(err, rc, NULL, "%s", why);
    if (rc != 0) {
        agent_cgroup_destroy(g);
        return rc;
    }
    g->memory_limited = lim->memory_mib > 0;
    g->memory_mib = lim->memory_mib;
    *out = g;
    return 0;
}

int agent_cgroup_join(int procs_fd)
{
    /* "0" is the writer itself: in v1's tasks file that is what lets the
     * kernel skip its lock on all thread groups */
    ssize_t w = write(procs_fd, "0", 1);
    if (w < 0)
        return -errno;
    return w == 1 ? 0 : -EIO;
}

void agent_cgroup_close_procs(struct agent_cgroup *g)
{
    if (g && g->procs_fd >= 0) {
        close(g->procs_fd);
        g->procs_fd = -1;
    }
    if (g && g->devices_fd >= 0) {
        close(g->devices_fd);
        g->devices_fd = -1;
    }
}

bool agent_cgroup_oom_killed(const struct agent_cgroup *g, int leader_signal)
{
    bool killed = false;
    if (!g || g->site->ops->oom_killed(g->path, leader_signal, &killed) != 0)
        return false;
    return killed;
}

int agent_cgroup_remove(struct agent_cgroup *g)
{
    if (!g || g->removed)
        return 0;
    agent_cgroup_close_procs(g);
    /* an empty group (the common end: its leader reaped, its process
     * group killed) goes with one rmdir; remove_dir kills what is left */
    int e = remove_dir(g->path);
    if (e != 0 || agent_cgroup_devices_remove(g) != 0)
        return TIDE_EIO;
    g->removed = true;
    return 0;
}

void agent_cgroup_destroy(struct agent_cgroup *g)
{
    if (!g)
        return;
    if (agent_cgroup_remove(g) != 0)
        log_warn("cannot remove cgroup %s: it stays busy", g->path);
    free(g->path);
    free(g->devices_path);
    free(g);
}
