/*
 * An elastic pool: a kind of node (GPU model, count, memory) that a
 * provider can create and delete, with its size limits, scaling knobs and
 * price. Parsed from tide.yaml's `pools:` section (server/config_pools.c);
 * read by the autoscaler and billing. Money is integer micro-units.
 */
#ifndef TIDE_POOL_H
#define TIDE_POOL_H

#include <stdint.h>

#include "core/cluster.h"

#define TIDE_MAX_POOLS 16
#define TIDE_PROGRAM_MAX 512

#define POOL_MAX_WINDOWS 8
#define POOL_MAX_STEPS 8
#define POOL_MAX_IMAGES 8   /* images: a pool prewarms on each new node */
#define POOL_IMAGE_MAX 256  /* bytes of one image reference, with its NUL */

/* Scheduled capacity: on the days in `days` (bit 0 Monday ... bit 6
 * Sunday), from from_min to to_min (minutes after midnight UTC, to_min
 * exclusive; to_min < from_min runs past midnight), keep min_nodes. */
struct pool_window {
    unsigned days;
    int from_min, to_min;
    int min_nodes;
};

/* Step scaling: when at least queue_length jobs (0: not a trigger) wait for
 * the pool, or the oldest has waited wait_s (0: not a trigger), add `add`
 * nodes at once (once per cooldown_s). */
struct pool_step {
    int queue_length;
    int64_t wait_s;
    int add;
};

enum billing_kind { BILLING_ON_DEMAND, BILLING_RESERVED, BILLING_SPOT, BILLING_PACK };

const char *billing_kind_name(enum billing_kind k);
/* The kind called name; -1 when none is. */
int billing_kind_from_name(const char *name);

struct pool {
    char name[TIDE_NAME_MAX];
    char gpu_model[TIDE_NAME_MAX]; /* "H200" */
    int gpus_per_node;
    int64_t gpu_memory_mib;
    char driver[TIDE_NAME_MAX];
    char region[TIDE_NAME_MAX];
    char provider[16];              /* "local" | "exec" */
    char program[TIDE_PROGRAM_MAX]; /* exec only */
    int min_nodes, max_nodes;
    int64_t boot_time_s;    /* expected; ranks pools of equal price */
    int64_t boot_timeout_s; /* not registered by then: deleted and replaced */
    /* How often its provider is asked what it holds (orphans to delete,
     * spot interruptions); 0: every 15 s for spot, 300 s for others. */
    int64_t list_interval_s;
    /* Container images every new node pulls before it registers (its agent's
     * --prewarm-image), and how long that takes: part of the boot estimate. */
    char images[POOL_MAX_IMAGES][POOL_IMAGE_MAX];
    int nimages;
    int64_t pull_time_s;
    int64_t price_per_node_hour_micros;
    int64_t spot_price_per_node_hour_micros; /* billing spot; 0: price_per_node_hour */
    int64_t pack_gpu_hours;                  /* billing pack: prepaid, drawn first */
    enum billing_kind billing;
    int64_t scale_up_delay_s;       /* pending this long before nodes are added */
    int scale_down_utilization_pct; /* busy below this counts as idle */
    int64_t scale_down_window_s;    /* idle this long: drained and released */
    int64_t cooldown_s;             /* no scale-down this soon after a scale event */
    int64_t interruption_grace_s;   /* spot: from interruption to the node being gone */
    struct pool_window windows[POOL_MAX_WINDOWS];
    int nwindows;
    struct pool_step steps[POOL_MAX_STEPS];
    int nsteps;
    /* Predictive pre-scaling (forecast.h): off unless set. */
    bool predictive;
    int forecast_alpha_pct; /* weight of the newest hour in the smoothing, 1..100 */
    /* Node health probe its agents run (agent_probe.h); "" for none. */
    char health_command[256];
    int64_t health_interval_s; /* 0: the agent's default */
};

/* Seconds from asking for a node to it taking work: boot_time_s plus the
 * pull of its prewarmed images (pull_time_s). */
int64_t pool_boot_estimate_s(const struct pool *p);

/* Fills p with the defaults of an unnamed local pool of 1 GPU. */
void pool_defaults(struct pool *p);

/* True when a node of pool p could ever hold job (GPU count, memory, model). */
bool pool_fits_job(const struct pool *p, const struct job *job);
/* The same for gpus GPUs of job's kind (its GPU memory and model): one
 * share of a gang job. */
bool pool_fits_share(const struct pool *p, const struct job *job, int gpus);

/* Whether node n's GPUs are not what pool p's nodes have: another count of
 * whole GPUs (MIG instances are parts of one), or another model (the
 * pool's gpu not a whole word of the GPU's name: "A100" is "NVIDIA
 * A100-SXM4-80GB", "A10" is not). Memory is not compared: a pool that
 * leaves gpu_memory_mib out has the H200's default, whatever its model.
 * Says how in why (size bytes) when so. */
bool pool_node_differs(const struct pool *p, const struct node *n, char *why, size_t size);

/* Price of one GPU for one hour, micro-units (ties broken by the caller). */
int64_t pool_price_per_gpu_hour_micros(const struct pool *p);

/* min_nodes at now_ms: the largest of min_nodes and the windows open then. */
int pool_min_nodes_at(const struct pool *p, int64_t now_ms);

/* The index of the pool called name in pools, or -1. */
int pool_find(const struct pool *pools, int npools, const char *name);

/* A provider call that failed `failures` (>= 1) times in a row is retried
 * after 2, 4, 8 ... seconds, at most POOL_BACKOFF_MAX_MS: the rule of the
 * server's pool loop (server/pool_loop.c), used by the simulator for its
 * simulated provider failures. 0 for failures <= 0. */
#define POOL_BACKOFF_MAX_MS 60000
int64_t pool_backoff_ms(int failures);

#endif
