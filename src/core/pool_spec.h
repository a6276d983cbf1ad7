/*
 * One entry of a `pools:` list as tide.yaml and `tide sim --config` both
 * write it: the keys, their bounds, defaults and checks, read from each
 * value's text. The server (server/config_pools.c: libyaml, with line
 * numbers) and the simulator (sim/sim_config.c: YAML read as JSON) walk
 * their own documents and hand every key here, so one file works in both.
 */
#ifndef TIDE_POOL_SPEC_H
#define TIDE_POOL_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/pool.h"

/* A pool being read: the core pool plus the shorthands that resolve into
 * it once every key is known. */
struct pool_spec {
    struct pool pool;                  /* starts as pool_defaults() */
    int nodes;                         /* `nodes: N`, a fixed size; -1: not given */
    int64_t price_per_gpu_hour_micros; /* -1: not given */
    bool price_per_node_hour_set;
    bool min_nodes_set, max_nodes_set;
    const char *first_elastic; /* first key given that only an elastic pool has, or NULL */
};

/* The keys pool_spec_set knows, for "unknown key" messages. */
extern const char pool_spec_keys[];

/* Starts s from pool_defaults() with nothing given. */
void pool_spec_init(struct pool_spec *s);

#define POOL_SPEC_UNKNOWN 1

/* Sets key (a pools: entry's key, without the "pools[i]." prefix) from the
 * scalar text of its value; text NULL means the value is not a scalar.
 * schedule: and steps: are lists: their entries' keys go through
 * pool_spec_window_set and pool_spec_step_set, and the caller counts them
 * into s->pool.windows / steps. Returns 0; POOL_SPEC_UNKNOWN when key is
 * not one of pool_spec_keys (nor schedule/steps); or TIDE_EINVAL with why
 * filled with the reason (without the key), e.g. "must be from 0 to 64,
 * got 99". */
int pool_spec_set(struct pool_spec *s, const char *key, const char *text, char *why,
                  size_t why_size);

/* One entry of an images: list (an image reference a new node pulls before
 * it registers); TIDE_EINVAL with why for a bad or one too many. */
int pool_spec_image_add(struct pool_spec *s, const char *text, char *why, size_t why_size);

/* One key of a schedule: entry (days, from, to, min_nodes) or of a steps:
 * entry (queue_length, wait_s, add); as pool_spec_set. */
int pool_spec_window_set(struct pool_window *w, const char *key, const char *text, char *why,
                         size_t why_size);
int pool_spec_step_set(struct pool_step *st, const char *key, const char *text, char *why,
                       size_t why_size);

/* Checks a finished schedule: or steps: entry; TIDE_EINVAL with why. */
int pool_spec_window_check(const struct pool_window *w, char *why, size_t why_size);
int pool_spec_step_check(const struct pool_step *st, char *why, size_t why_size);

/* Keys that describe what the simulated cloud does (spot interruptions,
 * failing create calls): read by tide sim, skipped by the server. */
bool pool_spec_sim_only(const char *key);

/* After the last key: checks the pool as a whole and resolves the
 * shorthands (nodes: N is min_nodes = max_nodes = N; price_per_gpu_hour
 * x gpus_per_node is the node price unless price_per_node_hour is given).
 * Returns 0, or TIDE_EINVAL with *key set to the key at fault and why
 * filled. */
int pool_spec_finish(struct pool_spec *s, const char **key, char *why, size_t why_size);

/* "4.20" or "4" (money units) into micro-units, exactly: at most 6
 * decimals, at most 1,000,000,000 units. -1 when s is not such an amount. */
int pool_parse_money_micros(const char *s, int64_t *out);

#endif
