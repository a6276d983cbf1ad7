/*
 * tide.yaml's `pools:` section: a list of elastic pools (core/pool.h), each
 * a mapping. The keys and their checks are core/pool_spec.c's, shared with
 * tide sim's config; this file walks the YAML for them, with file:line
 * errors, and refuses a name used twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pool_spec.h"
#include "server/config.h"

/* The pool being parsed; config loading is single-threaded. */
static struct pool_spec *cur;

int config_want_money(struct config_ctx *c, const yaml_node_t *v, const char *key, int64_t *out)
{
    const char *s = config_scalar(v);
    if (!s || pool_parse_money_micros(s, out) != 0)
        return config_fail(c, v, key,
                           "must be an amount from 0 to 1000000000 with at most 6 decimals, like "
                           "4.20, got '%s'",
                           s ? s : "?");
    return 0;
}

/* A pool's schedule: and steps: entries: their keys go to pool_spec. */
static int window_key(struct config_ctx *c, const char *key, const char *name, const yaml_node_t *v)
{
    char why[200];
    if (pool_spec_window_set(&cur->pool.windows[cur->pool.nwindows], name, config_scalar(v), why,
                             sizeof why))
        return config_fail(c, v, key, "%s", why);
    return 0;
}

static int step_key(struct config_ctx *c, const char *key, const char *name, const yaml_node_t *v)
{
    char why[200];
    if (pool_spec_step_set(&cur->pool.steps[cur->pool.nsteps], name, config_scalar(v), why,
                           sizeof why))
        return config_fail(c, v, key, "%s", why);
    return 0;
}

/* schedule: and steps: lists of mappings. */
static int pool_list(struct config_ctx *c, const char *key, const yaml_node_t *v, bool windows)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return config_fail(c, v, key, "must be a list of mappings%s", "");
    struct pool *p = &cur->pool;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        const yaml_node_t *item = yaml_document_get_node(c->doc, *it);
        int *count = windows ? &p->nwindows : &p->nsteps;
        char where[160], why[200];
        snprintf(where, sizeof where, "%s[%d]", key, *count);
        if (*count == (windows ? POOL_MAX_WINDOWS : POOL_MAX_STEPS))
            return config_fail(c, item, where, "at most %s entries", "8");
        int rc = config_walk_mapping(c, where, item, windows ? window_key : step_key);
        if (rc)
            return rc;
        if (windows ? pool_spec_window_check(&p->windows[*count], why, sizeof why)
                    : pool_spec_step_check(&p->steps[*count], why, sizeof why))
            return config_fail(c, item, where, "%s", why);
        (*count)++;
    }
    return 0;
}

/* images: a list of image references. */
static int pool_images(struct config_ctx *c, const char *key, const yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return config_fail(c, v, key, "must be a list of image references%s", "");
    int i = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++, i++) {
        const yaml_node_t *item = yaml_document_get_node(c->doc, *it);
        char where[160], why[200];
        snprintf(where, sizeof where, "%s[%d]", key, i);
        if (pool_spec_image_add(cur, config_scalar(item), why, sizeof why))
            return config_fail(c, item, where, "%s", why);
    }
    return 0;
}

static int pool_key(struct config_ctx *c, const char *key, const char *k, const yaml_node_t *v)
{
    if (!strcmp(k, "images"))
        return pool_images(c, key, v);
    if (!strcmp(k, "schedule") || !strcmp(k, "steps"))
        return pool_list(c, key, v, k[1] == 'c');
    if (pool_spec_sim_only(k))
        return 0; /* what tide sim's cloud does; this server's cloud is real */
    if (!strcmp(k, "cpus") || !strcmp(k, "memory"))
        return config_fail(c, v, key,
                           "is read by tide sim only: the server's nodes report their own%s",
                           " CPUs and memory");
    char why[200];
    int rc = pool_spec_set(cur, k, config_scalar(v), why, sizeof why);
    if (rc == POOL_SPEC_UNKNOWN)
        return config_fail(c, v, key, "unknown key (known: %s)", pool_spec_keys);
    if (rc)
        return config_fail(c, v, key, "%s", why);
    return 0;
}

int config_section_pools(struct config_ctx *c, const char *name, const yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return config_fail(c, v, name, "must be a list of pools (- name: ...)%s", "");
    struct server_config *cfg = c->cfg;
    cfg->npools = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        const yaml_node_t *item = yaml_document_get_node(c->doc, *it);
        char section[48];
        snprintf(section, sizeof section, "pools[%d]", cfg->npools);
        if (cfg->npools == TIDE_MAX_POOLS)
            return config_fail(c, item, section, "at most %s pools", "16");
        struct pool_spec spec;
        cur = &spec;
        pool_spec_init(cur);
        int rc = config_walk_mapping(c, section, item, pool_key);
        if (rc)
            return rc;
        const char *bad = NULL;
        char why[200];
        if (pool_spec_finish(cur, &bad, why, sizeof why)) {
            char key[96];
            snprintf(key, sizeof key, "%s.%s", section, bad);
            return config_fail(c, item, key, "%s", why);
        }
        if (pool_find(cfg->pools, cfg->npools, cur->pool.name) >= 0)
            return config_fail(c, item, section, "name: '%s' is used by another pool",
                               cur->pool.name);
        cfg->pools[cfg->npools] = cur->pool;
        cfg->npools++;
    }
    return 0;
}
