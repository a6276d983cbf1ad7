/*
 * Real NVIDIA GPUs through NVML, loaded with dlopen so that building tide
 * needs no NVIDIA package and a node without the driver still runs gpus:0
 * jobs. Only the few NVML types and calls the agent uses are declared here.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/gpu.h"
#include "agent/leftovers.h"
#include "core/gpu_share.h"

typedef int nvml_return; /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device_opaque *nvml_device;

struct nvml_memory { /* nvmlMemory_t, bytes */
    unsigned long long total, free, used;
};
struct nvml_utilization { /* nvmlUtilization_t, percent */
    unsigned int gpu, memory;
};
struct nvml_process { /* nvmlProcessInfo_t of the _v2/_v3 calls */
    unsigned int pid;
    unsigned long long used_gpu_memory; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
    unsigned int gpu_instance_id, compute_instance_id;
};

#define NVML_SUCCESS 0
#define NVML_TEMPERATURE_GPU 0
#define NVML_DEVICE_MIG_ENABLE 1
#define NVML_NAME_BUFFER 96
#define NVML_UUID_BUFFER 96
#define NVML_DRIVER_BUFFER 80
#define NVML_ERROR_NOT_FOUND 6
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define NVML_MAX_PROCESSES 256
#define NVML_MAX_MIG_PER_GPU 7
/* Health (not testable without a GPU: see docs/health.md) */
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_RESET_REQUIRED 16
#define NVML_ERROR_UNKNOWN 999
#define NVML_EVENT_XID_CRITICAL 0x8ULL
#define NVML_MEMORY_ERROR_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_THROTTLE_HW_SLOWDOWN 0x8ULL
#define NVML_THROTTLE_HW_THERMAL 0x40ULL

typedef struct nvml_event_set_opaque *nvml_event_set;
struct nvml_event_data { /* nvmlEventData_t */
    nvml_device device;
    unsigned long long event_type, event_data;
    unsigned int gpu_instance_id, compute_instance_id;
};

/* What health has seen of one physical GPU so far. */
struct nvml_health_state {
    struct gpu_health h;
    unsigned long long ecc_seen;
    bool throttled;
    bool unreadable; /* NVML_ERROR_UNKNOWN at the last look */
};

struct nvml_api {
    void *lib;
    nvml_return (*init)(void);
    nvml_return (*shutdown)(void);
    const char *(*error_string)(nvml_return);
    nvml_return (*device_count)(unsigned int *);
    nvml_return (*device_by_index)(unsigned int, nvml_device *);
    nvml_return (*device_name)(nvml_device, char *, unsigned int);
    nvml_return (*device_uuid)(nvml_device, char *, unsigned int);
    nvml_return (*memory_info)(nvml_device, struct nvml_memory *);
    nvml_return (*utilization)(nvml_device, struct nvml_utilization *);
    nvml_return (*temperature)(nvml_device, int, unsigned int *);
    nvml_return (*power_usage)(nvml_device, unsigned int *);
    nvml_return (*minor_number)(nvml_device, unsigned int *);
    nvml_return (*driver_version)(char *, unsigned int);
    nvml_return (*mig_mode)(nvml_device, unsigned int *, unsigned int *);
    /* optional: MIG instances and per-process memory */
    nvml_return (*max_mig_count)(nvml_device, unsigned int *);
    nvml_return (*mig_by_index)(nvml_device, unsigned int, nvml_device *);
    nvml_return (*compute_processes)(nvml_device, unsigned int *, struct nvml_process *);
    /* optional: health (XID events, ECC counts, throttling) */
    nvml_return (*event_set_create)(nvml_event_set *);
    nvml_return (*register_events)(nvml_device, unsigned long long, nvml_event_set);
    nvml_return (*event_set_wait)(nvml_event_set, struct nvml_event_data *, unsigned int);
    nvml_return (*event_set_free)(nvml_event_set);
    nvml_return (*ecc_errors)(nvml_device, int, int, unsigned long long *);
    nvml_return (*throttle_reasons)(nvml_device, unsigned long long *);
    nvml_event_set events; /* NULL when XID events are not available */
    struct nvml_health_state *health; /* one per device */
    nvml_device *handles; /* one per device in be->devices, instances included */
};

/* dlsym's void * cannot be assigned to a function pointer in ISO C; copying
 * the bits is the sanctioned POSIX way around that. */
static int nvml_bind(void *lib, const char *sym, void *fnptr, size_t size)
{
    void *p = dlsym(lib, sym);
    if (!p)
        return -1;
    memcpy(fnptr, &p, size);
    return 0;
}

#define NVML_BIND(api, field, sym) nvml_bind((api)->lib, sym, &(api)->field, sizeof((api)->field))

static const char *nvml_err(const struct nvml_api *api, nvml_return r)
{
    const char *s = api->error_string ? api->error_string(r) : NULL;
    return s ? s : "unknown NVML error";
}

static void nvml_free(struct nvml_api *api)
{
    if (!api)
        return;
    free(api->handles);
    free(api->health);
    if (api->lib)
        dlclose(api->lib);
    free(api);
}

/* "3g.40gb" from an instance's name ("NVIDIA A100-SXM4-80GB MIG 3g.40gb"):
 * the word after " MIG ", if it has the shape of a profile. */
static bool profile_from_name(const char *name, char *out, size_t size)
{
    const char *p = strstr(name, " MIG ");
    if (!p)
        return false;
    p += 5;
    char word[32];
    size_t len = strcspn(p, " ");
    if (len == 0 || len >= sizeof word)
        return false;
    memcpy(word, p, len);
    word[len] = '\0';
    if (!gpu_mig_profile_valid(word))
        return false;
    snprintf(out, size, "%.23s", word);
    return true;
}

/* Appends the MIG instances of GPU i (in MIG mode) to be->devices. An
 * instance whose profile cannot be told is left out: no job could ask
 * for it by name. */
static void add_mig_instances(struct nvml_api *api, struct gpu_backend *be, unsigned int i,
                              size_t cap)
{
    unsigned int max = 0;
    if (!api->max_mig_count || !api->mig_by_index ||
        api->max_mig_count(api->handles[i], &max) != NVML_SUCCESS)
        return;
    for (unsigned int k = 0; k < max && k < NVML_MAX_MIG_PER_GPU && be->count < cap; k++) {
        nvml_device m;
        /* NOT_FOUND: no instance in this slot */
        if (api->mig_by_index(api->handles[i], k, &m) != NVML_SUCCESS)
            continue;
        struct gpu_device *d = &be->devices[be->count];
        memset(d, 0, sizeof *d);
        if (api->device_uuid(m, d->uuid, sizeof d->uuid) != NVML_SUCCESS ||
            api->device_name(m, d->name, sizeof d->name) != NVML_SUCCESS ||
            !profile_from_name(d->name, d->mig_profile, sizeof d->mig_profile))
            continue;
        struct nvml_memory mem;
        if (api->memory_info(m, &mem) == NVML_SUCCESS)
            d->memory_total_mib = (int64_t)(mem.total / (1024 * 1024));
        d->index = (int)be->count;
        d->parent_index = be->devices[i].index;
        d->minor = -1;
        api->handles[be->count] = m;
        be->count++;
    }
}

/* Registers the first n (physical) GPUs for XID events; without the calls
 * or the permission, health goes without them. */
static void watch_xid(struct nvml_api *api, unsigned int n)
{
    if (!api->event_set_create || !api->register_events || !api->event_set_wait ||
        api->event_set_create(&api->events) != NVML_SUCCESS) {
        api->events = NULL;
        return;
    }
    for (unsigned int i = 0; i < n; i++)
        (void)api->register_events(api->handles[i], NVML_EVENT_XID_CRITICAL, api->events);
}

static void note_fault(struct nvml_health_state *s, const char *what)
{
    s->h.seq++;
    snprintf(s->h.what, sizeof s->h.what, "%s", what);
}

static int nvml_health(struct gpu_backend *be, struct gpu_health *out, struct tide_err *err)
{
    (void)err;
    struct nvml_api *api = be->priv;
    struct nvml_event_data ev;
    /* XID events queued since the last heartbeat; timeout 0: never wait */
    while (api->events && api->event_set_wait(api->events, &ev, 0) == NVML_SUCCESS) {
        for (size_t i = 0; i < be->count; i++)
            if (api->handles[i] == ev.device && (ev.event_type & NVML_EVENT_XID_CRITICAL) &&
                !gpu_xid_is_a_programs(ev.event_data)) {
                char what[48];
                snprintf(what, sizeof what, "xid %llu", ev.event_data);
                note_fault(&api->health[i], what);
            }
    }
    for (size_t i = 0; i < be->count; i++) {
        struct nvml_health_state *s = &api->health[i];
        if (be->devices[i].parent_index >= 0 || s->h.node_wide)
            continue; /* a MIG instance is its GPU's; a lost GPU stays lost */
        struct nvml_memory mem;
        nvml_return r = api->memory_info(api->handles[i], &mem);
        if (r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_RESET_REQUIRED) {
            /* gone until reset, which on NVLink boards means the node's */
            note_fault(s, r == NVML_ERROR_GPU_IS_LOST ? "lost (fell off the bus)"
                                                      : "lost (reset required)");
            s->h.node_wide = true;
            continue;
        }
        /* the driver cannot say what is wrong: no work for this GPU, once
         * per episode, the node's others go on */
        if (r == NVML_ERROR_UNKNOWN && !s->unreadable)
            note_fault(s, "unreadable (NVML unknown error)");
        s->unreadable = r == NVML_ERROR_UNKNOWN;
        unsigned long long ecc = 0;
        if (api->ecc_errors &&
            api->ecc_errors(api->handles[i], NVML_MEMORY_ERROR_UNCORRECTED, NVML_VOLATILE_ECC,
                            &ecc) == NVML_SUCCESS &&
            ecc > s->ecc_seen) {
            char what[48];
            snprintf(what, sizeof what, "ecc %llu", ecc);
            note_fault(s, what);
            s->ecc_seen = ecc;
        }
        unsigned long long reasons = 0;
        bool hot = api->throttle_reasons &&
                   api->throttle_reasons(api->handles[i], &reasons) == NVML_SUCCESS &&
                   (reasons & (NVML_THROTTLE_HW_SLOWDOWN | NVML_THROTTLE_HW_THERMAL));
        if (hot && !s->throttled) {
            unsigned int temp = 0;
            char what[48] = "temp (thermal slowdown)"; /* unread: no made-up 0 C */
            if (api->temperature(api->handles[i], NVML_TEMPERATURE_GPU, &temp) == NVML_SUCCESS)
                snprintf(what, sizeof what, "temp %u (thermal slowdown)", temp);
            note_fault(s, what);
        }
        s->throttled = hot;
    }
    for (size_t i = 0; i < be->count; i++)
        out[i] = api->health[i].h;
    return 0;
}

static int nvml_open(struct gpu_backend *be, const char *spec, const char *node_name,
                     struct tide_err *err)
{
    (void)spec;
    (void)node_name;
    struct nvml_api *api = calloc(1, sizeof *api);
    if (!api)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) {
        const char *why = dlerror();
        tide_err_set(err, TIDE_ENOENT, NULL, "cannot load libnvidia-ml.so.1: %s",
                     why ? why : "not found");
        nvml_free(api);
        return TIDE_ENOENT;
    }
    /* error_string and mig_mode are optional: old drivers lack the latter */
    (void)NVML_BIND(api, error_string, "nvmlErrorString");
    (void)NVML_BIND(api, mig_mode, "nvmlDeviceGetMigMode");
    (void)NVML_BIND(api, minor_number, "nvmlDeviceGetMinorNumber");
    (void)NVML_BIND(api, max_mig_count, "nvmlDeviceGetMaxMigDeviceCount");
    (void)NVML_BIND(api, mig_by_index, "nvmlDeviceGetMigDeviceHandleByIndex");
    if (NVML_BIND(api, compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3"))
        (void)NVML_BIND(api, compute_processes, "nvmlDeviceGetComputeRunningProcesses_v2");
    (void)NVML_BIND(api, event_set_create, "nvmlEventSetCreate");
    (void)NVML_BIND(api, register_events, "nvmlDeviceRegisterEvents");
    if (NVML_BIND(api, event_set_wait, "nvmlEventSetWait_v2"))
        (void)NVML_BIND(api, event_set_wait, "nvmlEventSetWait");
    (void)NVML_BIND(api, event_set_free, "nvmlEventSetFree");
    (void)NVML_BIND(api, ecc_errors, "nvmlDeviceGetTotalEccErrors");
    if (NVML_BIND(api, throttle_reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
        (void)NVML_BIND(api, throttle_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (NVML_BIND(api, init, "nvmlInit_v2") || NVML_BIND(api, shutdown, "nvmlShutdown") ||
        NVML_BIND(api, device_count, "nvmlDeviceGetCount_v2") ||
        NVML_BIND(api, device_by_index, "nvmlDeviceGetHandleByIndex_v2") ||
        NVML_BIND(api, device_name, "nvmlDeviceGetName") ||
        NVML_BIND(api, device_uuid, "nvmlDeviceGetUUID") ||
        NVML_BIND(api, memory_info, "nvmlDeviceGetMemoryInfo") ||
        NVML_BIND(api, utilization, "nvmlDeviceGetUtilizationRates") ||
        NVML_BIND(api, temperature, "nvmlDeviceGetTemperature") ||
        NVML_BIND(api, power_usage, "nvmlDeviceGetPowerUsage") ||
        NVML_BIND(api, driver_version, "nvmlSystemGetDriverVersion")) {
        tide_err_set(err, TIDE_EIO, NULL, "libnvidia-ml.so.1 lacks a needed NVML function");
        nvml_free(api);
        return TIDE_EIO;
    }
    nvml_return r = api->init();
    if (r != NVML_SUCCESS) {
        tide_err_set(err, TIDE_EIO, NULL, "nvmlInit: %s", nvml_err(api, r));
        nvml_free(api);
        return TIDE_EIO;
    }
    unsigned int n = 0;
    r = api->device_count(&n);
    if (r != NVML_SUCCESS || n > GPU_MAX_DEVICES) {
        tide_err_set(err, TIDE_EIO, NULL, "nvmlDeviceGetCount: %s",
                     r != NVML_SUCCESS ? nvml_err(api, r) : "too many devices");
        api->shutdown();
        nvml_free(api);
        return TIDE_EIO;
    }
    char version[NVML_DRIVER_BUFFER] = "";
    if (api->driver_version(version, sizeof version) != NVML_SUCCESS)
        snprintf(version, sizeof version, "unknown");
    snprintf(be->driver, sizeof be->driver, "nvidia %s", version);

    /* room for every GPU and, behind them, each one's MIG instances */
    size_t cap = (size_t)n * (1 + NVML_MAX_MIG_PER_GPU);
    if (cap > GPU_MAX_DEVICES)
        cap = GPU_MAX_DEVICES;
    be->devices = calloc(cap ? cap : 1, sizeof *be->devices);
    api->handles = calloc(cap ? cap : 1, sizeof *api->handles);
    if (!be->devices || !api->handles) {
        free(be->devices);
        be->devices = NULL;
        api->shutdown();
        nvml_free(api);
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    for (unsigned int i = 0; i < n; i++) {
        struct gpu_device *d = &be->devices[i];
        nvml_device h;
        r = api->device_by_index(i, &h);
        if (r == NVML_SUCCESS)
            r = api->device_uuid(h, d->uuid, sizeof d->uuid);
        if (r != NVML_SUCCESS) {
            tide_err_set(err, TIDE_EIO, NULL, "GPU %u: %s", i, nvml_err(api, r));
            free(be->devices);
            be->devices = NULL;
            api->shutdown();
            nvml_free(api);
            return TIDE_EIO;
        }
        api->handles[i] = h;
        d->index = (int)i;
        if (api->device_name(h, d->name, sizeof d->name) != NVML_SUCCESS)
            snprintf(d->name, sizeof d->name, "unknown");
        struct nvml_memory mem;
        if (api->memory_info(h, &mem) == NVML_SUCCESS)
            d->memory_total_mib = (int64_t)(mem.total / (1024 * 1024));
        unsigned int cur = 0, pending = 0;
        /* NOT_SUPPORTED on GPUs without MIG: that simply means "off" */
        if (api->mig_mode && api->mig_mode(h, &cur, &pending) == NVML_SUCCESS)
            d->mig_mode = cur == NVML_DEVICE_MIG_ENABLE;
        d->parent_index = -1;
        unsigned int minor = 0;
        /* /dev/nvidiaN's N: the driver's numbering, not always NVML's order */
        d->minor = api->minor_number && api->minor_number(h, &minor) == NVML_SUCCESS
                       ? (int)minor
                       : (int)i; /* as NVML orders them: what was assumed before */
    }
    be->count = n;
    for (unsigned int i = 0; i < n; i++)
        if (be->devices[i].mig_mode)
            add_mig_instances(api, be, i, cap);
    api->health = calloc(cap ? cap : 1, sizeof *api->health);
    if (!api->health) {
        free(be->devices);
        be->devices = NULL;
        api->shutdown();
        nvml_free(api);
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    watch_xid(api, n);
    be->priv = api;
    return 0;
}

static int nvml_sample(struct gpu_backend *be, const struct gpu_claim *claims, size_t nclaims,
                       struct gpu_telemetry *out, struct tide_err *err)
{
    (void)claims;
    (void)nclaims;
    (void)err;
    struct nvml_api *api = be->priv;
    /* a field NVML cannot read this time is reported as 0 rather than failing
     * the whole heartbeat */
    for (size_t i = 0; i < be->count; i++) {
        nvml_device h = api->handles[i];
        struct gpu_telemetry *t = &out[i];
        memset(t, 0, sizeof *t);
        struct nvml_memory mem;
        if (api->memory_info(h, &mem) == NVML_SUCCESS)
            t->memory_used_mib = (int64_t)(mem.used / (1024 * 1024));
        struct nvml_utilization u;
        if (api->utilization(h, &u) == NVML_SUCCESS)
            t->utilization_pct = (int)u.gpu;
        unsigned int temp;
        if (api->temperature(h, NVML_TEMPERATURE_GPU, &temp) == NVML_SUCCESS)
            t->temperature_c = (int)temp;
        unsigned int mw;
        if (api->power_usage(h, &mw) == NVML_SUCCESS)
            t->power_w = (int)(mw / 1000);
    }
    return 0;
}

/* Sums usedGpuMemory of the task's compute processes on the claim's
 * devices: those in process group pgid, and those that left it (a child in
 * a session of its own) but carry the job's TIDE_WORK_DIR. A process whose
 * memory NVML does not report (it needs privileges in some setups) counts
 * as 0: enforcement is best effort. */
static int nvml_task_memory(struct gpu_backend *be, const struct gpu_claim *claim, pid_t pgid,
                            int64_t *mib)
{
    struct nvml_api *api = be->priv;
    *mib = 0;
    if (!api || !api->compute_processes || pgid <= 0)
        return TIDE_ENOENT;
    static struct nvml_process procs[NVML_MAX_PROCESSES];
    unsigned long long bytes = 0;
    bool seen = false;
    for (size_t c = 0; c < claim->ngpus; c++) {
        size_t d = 0;
        while (d < be->count && be->devices[d].index != claim->gpus[c])
            d++;
        if (d == be->count)
            continue;
        unsigned int n = NVML_MAX_PROCESSES;
        /* INSUFFICIENT_SIZE with more than we can hold: the first
         * NVML_MAX_PROCESSES are what we can judge by */
        if (api->compute_processes(api->handles[d], &n, procs) != NVML_SUCCESS)
            continue;
        seen = true;
        for (unsigned int k = 0; k < n && k < NVML_MAX_PROCESSES; k++)
            if (procs[k].used_gpu_memory != NVML_VALUE_NOT_AVAILABLE &&
                (getpgid((pid_t)procs[k].pid) == pgid ||
                 (claim->jobs_dir && agent_process_is_jobs("/proc", (pid_t)procs[k].pid,
                                                           claim->jobs_dir, claim->job_id))))
                bytes += procs[k].used_gpu_memory;
    }
    if (!seen)
        return TIDE_ENOENT;
    *mib = (int64_t)(bytes / (1024 * 1024));
    return 0;
}

static void nvml_close(struct gpu_backend *be)
{
    struct nvml_api *api = be->priv;
    if (api) {
        if (api->events && api->event_set_free)
            api->event_set_free(api->events);
        api->shutdown();
        nvml_free(api);
    }
    free(be->devices);
    be->devices = NULL;
    be->count = 0;
    be->priv = NULL;
}

const struct gpu_ops gpu_nvml_ops = {
    .name = "nvml",
    .visible_by_index = false,
    .open = nvml_open,
    .sample = nvml_sample,
    .task_memory_mib = nvml_task_memory,
    .health = nvml_health,
    .close = nvml_close,
};
