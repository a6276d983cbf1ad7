/*
 * Scriptable fake GPUs: the devices come from the --fake-gpus spec and the
 * telemetry from what each task writes to its TIDE_FAKE_GPU_FILE, so tests
 * and demos can drive the dashboard, placement and alerts without hardware.
 */
#include "agent/gpu_fake.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "core/gpu_share.h"

/* An idle fake GPU sits here; a busy one heats up and draws more. */
#define FAKE_IDLE_TEMP_C 30
#define FAKE_IDLE_POWER_W 60
#define FAKE_MAX_MODEL_LEN 63
/* 1 PiB: far above any GPU, low enough that no product overflows. */
#define FAKE_MAX_MEMORY_MIB (1024LL * 1024 * 1024)
#define FAKE_TELEMETRY_MAX_BYTES 4096
/* A task's file is read again for a sample once its last reading is this
 * old (with a claim that keeps one): the heartbeats that follow a wave of
 * starts and exits share one reading, and the periodic one (every second
 * by default, never under 250 ms in practice) always reads anew. */
#define FAKE_TELEMETRY_REREAD_MS 250

/* Reads an unsigned decimal at *p (at least one digit, no sign), advances p.
 * Fails on no digits or a value above max. */
static int parse_uint(const char **p, long long max, long long *out)
{
    const char *s = *p;
    long long v = 0;
    if (!isdigit((unsigned char)*s))
        return -1;
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (*s - '0');
        if (v > max)
            return -1;
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}

/* An A100 has 7 compute slices to cut MIG instances from. */
#define FAKE_MIG_SLICES 7
#define FAKE_MIG_MAX 7

struct fake_mig {
    char profile[24];
    int64_t memory_mib;
};

/* "mig=3g.40gb*2+1g.10gb" (count 1 when left out) into out[*n], checked
 * against one GPU of memory_mib. */
static int parse_mig(const char *entry, const char *p, int64_t memory_mib, struct fake_mig *out,
                     int *n, struct tide_err *err)
{
    *n = 0;
    if (strncmp(p, "mig=", 4) != 0)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus",
                            "'%s': after MEMORY only ':mig=PROFILE*COUNT[+...]' may follow", entry);
    p += 4;
    int slices = 0;
    int64_t memory = 0;
    for (;;) {
        const char *end = strchr(p, '+');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[64];
        if (len == 0 || len >= sizeof item)
            return tide_err_set(err, TIDE_EINVAL, "fake-gpus", "'%s': empty or long MIG item", entry);
        memcpy(item, p, len);
        item[len] = '\0';
        long long count = 1;
        char *star = strchr(item, '*');
        if (star) {
            *star = '\0';
            const char *c = star + 1;
            if (parse_uint(&c, FAKE_MIG_MAX, &count) != 0 || *c || count < 1)
                return tide_err_set(err, TIDE_EINVAL, "fake-gpus",
                                    "'%s': MIG count must be 1..%d", entry, FAKE_MIG_MAX);
        }
        if (!gpu_mig_profile_valid(item))
            return tide_err_set(err, TIDE_EINVAL, "fake-gpus",
                                "'%s': '%s' is not a MIG profile like 1g.10gb", entry, item);
        long long gb = atoll(strchr(item, '.') + 1);
        for (long long k = 0; k < count; k++) {
            if (*n >= FAKE_MIG_MAX)
                return tide_err_set(err, TIDE_EINVAL, "fake-gpus",
                                    "'%s': at most %d MIG instances per GPU", entry, FAKE_MIG_MAX);
            snprintf(out[*n].profile, sizeof out[*n].profile, "%.23s", item);
            out[*n].memory_mib = gb * 1024;
            (*n)++;
            slices += item[0] - '0';
            memory += gb * 1024;
        }
        if (!end)
            break;
        p = end + 1;
    }
    if (slices > FAKE_MIG_SLICES || memory > memory_mib)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus",
                            "'%s': the MIG instances need more than the GPU's %d slices or memory",
                            entry, FAKE_MIG_SLICES);
    return 0;
}

/* One COUNTxMODEL:MEMORY[:mig=...] entry of length len at s. */
static int parse_entry(const char *s, size_t len, long long *count, char *model,
                       int64_t *memory_mib, struct fake_mig *mig, int *nmig,
                       struct tide_err *err)
{
    *nmig = 0;
    char entry[256];
    if (len == 0)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus", "empty entry in the list");
    if (len >= sizeof entry)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus", "entry too long (at most %zu chars)",
                            sizeof entry - 1);
    memcpy(entry, s, len);
    entry[len] = '\0';
    const char *p = entry;
    if (parse_uint(&p, GPU_MAX_DEVICES, count) != 0 || *p != 'x')
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus",
                            "'%s': expected COUNTxMODEL:MEMORY like 4xH200:141GB", entry);
    if (*count < 1)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus", "'%s': count must be 1..%d", entry,
                            GPU_MAX_DEVICES);
    p++;
    const char *colon = strchr(p, ':');
    if (!colon)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus", "'%s': missing ':MEMORY' (like :141GB)",
                            entry);
    size_t mlen = (size_t)(colon - p);
    if (mlen == 0 || mlen > FAKE_MAX_MODEL_LEN)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus", "'%s': model must be 1..%d chars", entry,
                            FAKE_MAX_MODEL_LEN);
    for (size_t i = 0; i < mlen; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-')
            return tide_err_set(err, TIDE_EINVAL, "fake-gpus",
                                "'%s': model may only hold letters, digits, '.', '_', '-'", entry);
    }
    memcpy(model, p, mlen);
    model[mlen] = '\0';
    p = colon + 1;
    char *mig_at = strchr(entry + (p - entry), ':');
    if (mig_at)
        *mig_at++ = '\0';
    long long mem;
    if (parse_uint(&p, FAKE_MAX_MEMORY_MIB, &mem) != 0 || mem == 0)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus",
                            "'%s': memory must be a positive integer with a unit (GB or MB)",
                            entry);
    if (!strcasecmp(p, "GB") || !strcasecmp(p, "GiB"))
        mem *= 1024;
    else if (strcasecmp(p, "MB") != 0 && strcasecmp(p, "MiB") != 0)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus",
                            "'%s': memory unit must be GB, GiB, MB or MiB", entry);
    if (mem > FAKE_MAX_MEMORY_MIB)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus", "'%s': memory too large", entry);
    *memory_mib = mem;
    return mig_at ? parse_mig(s, mig_at, mem, mig, nmig, err) : 0;
}

int gpu_fake_parse_spec(const char *spec, const char *node_name, struct gpu_device **out,
                        size_t *count, struct tide_err *err)
{
    *out = NULL;
    *count = 0;
    if (!spec || !*spec)
        return tide_err_set(err, TIDE_EINVAL, "fake-gpus", "empty spec (like 4xH200:141GB)");
    struct gpu_device *devs = NULL, *inst = NULL;
    size_t n = 0, ninst = 0;
    const char *s = spec;
    for (;;) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        long long k = 0;
        char model[FAKE_MAX_MODEL_LEN + 1] = "";
        int64_t mem = 0;
        struct fake_mig mig[FAKE_MIG_MAX];
        int nmig = 0;
        int rc = parse_entry(s, len, &k, model, &mem, mig, &nmig, err);
        if (rc != 0) {
            free(devs);
            free(inst);
            return rc;
        }
        if (n + ninst + (size_t)k * (size_t)(1 + nmig) > GPU_MAX_DEVICES) {
            free(devs);
            free(inst);
            return tide_err_set(err, TIDE_EINVAL, "fake-gpus", "at most %d GPUs in all",
                                GPU_MAX_DEVICES);
        }
        struct gpu_device *grown = realloc(devs, (n + (size_t)k) * sizeof *devs);
        if (grown)
            devs = grown;
        struct gpu_device *igrown =
            nmig ? realloc(inst, (ninst + (size_t)k * (size_t)nmig) * sizeof *inst) : inst;
        if (igrown)
            inst = igrown;
        if (!grown || (nmig && !igrown)) {
            free(devs);
            free(inst);
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        }
        for (long long i = 0; i < k; i++, n++) {
            struct gpu_device *d = &devs[n];
            memset(d, 0, sizeof *d);
            d->index = (int)n;
            snprintf(d->name, sizeof d->name, "%s", model);
            d->memory_total_mib = mem;
            /* node names are bounded by the agent's options, so this fits */
            snprintf(d->uuid, sizeof d->uuid, "GPU-fake-%s-%zu", node_name ? node_name : "node", n);
            d->parent_index = -1;
            d->minor = (int)n; /* as a driver numbers them, in order */
            d->mig_mode = nmig > 0;
            for (int m = 0; m < nmig; m++, ninst++) {
                struct gpu_device *e = &inst[ninst];
                memset(e, 0, sizeof *e);
                e->parent_index = (int)n;
                e->minor = -1;
                snprintf(e->name, sizeof e->name, "%.63s MIG %.23s", model, mig[m].profile);
                snprintf(e->mig_profile, sizeof e->mig_profile, "%.23s", mig[m].profile);
                e->memory_total_mib = mig[m].memory_mib;
                snprintf(e->uuid, sizeof e->uuid, "MIG-fake-%s-%zu-%d", node_name ? node_name : "node",
                         n, m);
            }
        }
        if (!end)
            break;
        s = end + 1;
    }
    /* instances after every physical GPU, so those keep indices 0..n-1 */
    if (ninst) {
        struct gpu_device *all = realloc(devs, (n + ninst) * sizeof *devs);
        if (!all) {
            free(devs);
            free(inst);
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        }
        devs = all;
        for (size_t i = 0; i < ninst; i++) {
            devs[n + i] = inst[i];
            devs[n + i].index = (int)(n + i);
        }
    }
    free(inst);
    *out = devs;
    *count = n + ninst;
    return 0;
}

int gpu_fake_parse_telemetry(const char *text, int *util_pct, int64_t *mem_mib)
{
    *util_pct = 0;
    *mem_mib = 0;
    const char *p = text;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            return 0;
        long long v;
        if (!strncmp(p, "util=", 5)) {
            p += 5;
            if (parse_uint(&p, 1000000, &v) != 0)
                return TIDE_EINVAL;
            *util_pct = v > 100 ? 100 : (int)v;
        } else if (!strncmp(p, "mem=", 4)) {
            p += 4;
            if (parse_uint(&p, FAKE_MAX_MEMORY_MIB, &v) != 0)
                return TIDE_EINVAL;
            *mem_mib = v;
        } else {
            return TIDE_EINVAL;
        }
        if (*p && !isspace((unsigned char)*p))
            return TIDE_EINVAL;
    }
}

/* Board power at full load, so a busy fake GPU draws a plausible amount. */
static int fake_max_power_w(const char *model)
{
    if (strstr(model, "H200") || strstr(model, "H100") || strstr(model, "B200"))
        return 700;
    if (strstr(model, "A100"))
        return 400;
    if (strstr(model, "T4") || strstr(model, "L4"))
        return 70;
    return 300;
}

static int fake_open(struct gpu_backend *be, const char *spec, const char *node_name,
                     struct tide_err *err)
{
    int rc = gpu_fake_parse_spec(spec, node_name, &be->devices, &be->count, err);
    if (rc != 0)
        return rc;
    snprintf(be->driver, sizeof be->driver, "fake");
    return 0;
}

/* Reads one task's file; a missing or malformed file means an idle task. */
static void read_claim(const char *path, int *util, int64_t *mem)
{
    *util = 0;
    *mem = 0;
    if (!path)
        return;
    /* the file is the job's, in its directory: never follow a link it put
     * there, never block on a FIFO, read only a regular file */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    char text[FAKE_TELEMETRY_MAX_BYTES + 1];
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof text - 1) : -1;
    close(fd);
    if (n <= 0)
        return;
    text[n] = '\0';
    if (gpu_fake_parse_telemetry(text, util, mem) != 0) {
        *util = 0;
        *mem = 0;
    }
}

static int fake_sample(struct gpu_backend *be, const struct gpu_claim *claims, size_t nclaims,
                       struct gpu_telemetry *out, struct tide_err *err)
{
    (void)err;
    memset(out, 0, be->count * sizeof *out);
    int64_t now = clock_mono_ms();
    for (size_t c = 0; c < nclaims; c++) {
        int util;
        int64_t mem;
        struct gpu_claim_reading *r = claims[c].reading;
        if (r && r->at_ms && now - r->at_ms < FAKE_TELEMETRY_REREAD_MS) {
            util = r->utilization_pct;
            mem = r->memory_used_mib;
        } else {
            read_claim(claims[c].telemetry_file, &util, &mem);
            if (r)
                *r = (struct gpu_claim_reading){now ? now : 1, util, mem};
        }
        for (size_t g = 0; g < claims[c].ngpus; g++) {
            int idx = claims[c].gpus[g];
            /* indices are the array positions in a fake backend */
            if (idx < 0 || (size_t)idx >= be->count)
                continue;
            /* tasks sharing a GPU add up, as on real hardware */
            out[idx].utilization_pct += util;
            out[idx].memory_used_mib += mem;
        }
    }
    for (size_t i = 0; i < be->count; i++) {
        struct gpu_telemetry *t = &out[i];
        if (t->utilization_pct > 100)
            t->utilization_pct = 100;
        if (t->memory_used_mib > be->devices[i].memory_total_mib)
            t->memory_used_mib = be->devices[i].memory_total_mib;
        int max_w = fake_max_power_w(be->devices[i].name);
        int idle_w = max_w / 3 < FAKE_IDLE_POWER_W ? max_w / 3 : FAKE_IDLE_POWER_W;
        t->temperature_c = FAKE_IDLE_TEMP_C + t->utilization_pct / 2;
        t->power_w = idle_w + (max_w - idle_w) * t->utilization_pct / 100;
    }
    return 0;
}

/* What the task wrote as mem= in its file is what it uses. */
static int fake_task_memory(struct gpu_backend *be, const struct gpu_claim *claim, pid_t pgid,
                            int64_t *mib)
{
    (void)be;
    (void)pgid;
    int util;
    read_claim(claim->telemetry_file, &util, mib);
    return 0;
}

#define FAKE_FAULT_MAX_BYTES (1024 * 1024)

void gpu_fake_watch_faults(struct gpu_backend *be, const char *path)
{
    struct stat st;
    be->fault_file = path;
    memset(&be->fault_origin, 0, sizeof be->fault_origin);
    if (stat(path, &st) == 0) {
        be->fault_origin.dev = st.st_dev;
        be->fault_origin.ino = st.st_ino;
        be->fault_origin.bytes = st.st_size;
    }
}

/* Where in text (len bytes of the fault file) this run's faults begin. */
static size_t fault_lines_start(struct gpu_backend *be, const char *text, size_t len)
{
    struct stat st;
    if (stat(be->fault_file, &st) != 0 || st.st_dev != be->fault_origin.dev ||
        st.st_ino != be->fault_origin.ino || (long long)len < be->fault_origin.bytes)
        be->fault_origin.bytes = 0; /* another file: all of it is new */
    size_t at = (size_t)be->fault_origin.bytes;
    /* a line being written as the agent started was the earlier run's */
    while (at > 0 && at < len && text[at - 1] != '\n')
        at++;
    return at;
}

static int fake_health(struct gpu_backend *be, struct gpu_health *out, struct tide_err *err)
{
    for (size_t i = 0; i < be->count; i++)
        memset(&out[i], 0, sizeof out[i]);
    if (!be->fault_file)
        return 0;
    char *text = NULL;
    size_t len = 0;
    int e = fs_read_file(be->fault_file, FAKE_FAULT_MAX_BYTES, &text, &len);
    if (e == -ENOENT)
        return 0; /* no fault injected yet */
    if (e != 0)
        return tide_err_set(err, TIDE_EIO, "--fake-fault-file", "%s: %s", be->fault_file,
                            strerror(-e));
    int bad = 0;
    e = gpu_fake_parse_faults(text + fault_lines_start(be, text, len), be->devices, be->count, out,
                              &bad);
    free(text);
    if (e != 0)
        return tide_err_set(err, TIDE_EINVAL, "--fake-fault-file",
                            "%s line %d: not \"INDEX xid|ecc|temp N\" or \"INDEX lost\" of a "
                            "GPU here",
                            be->fault_file, bad);
    return 0;
}

static void fake_close(struct gpu_backend *be)
{
    free(be->devices);
    be->devices = NULL;
    be->count = 0;
}

const struct gpu_ops gpu_fake_ops = {
    .name = "fake",
    .visible_by_index = true,
    .open = fake_open,
    .sample = fake_sample,
    .task_memory_mib = fake_task_memory,
    .health = fake_health,
    .close = fake_close,
};
