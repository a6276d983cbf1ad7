/*
 * tide.yaml's `pools:` section: a list of elastic pools (core/pool.h), each
 * a mapping. Keys are checked one by one with file:line errors; then each
 * pool as a whole (unique name, min <= max, exec needs a program).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"

/* The pool being parsed; config loading is single-threaded. */
static struct pool *cur;

int config_want_money(struct config_ctx *c, const yaml_node_t *v, const char *key, int64_t *out)
{
    const char *s = config_scalar(v);
    if (!s || !*s)
        return config_fail(c, v, key, "must be an amount like 4.20%s", "");
    int64_t whole = 0, frac = 0;
    int digits = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (*p - '0');
        if (whole > 1000000000)
            return config_fail(c, v, key, "must be at most 1000000000, got %s", s);
    }
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) {
            if (++digits > 6)
                return config_fail(c, v, key, "at most 6 decimals, got %s", s);
            frac = frac * 10 + (*p - '0');
        }
    if (*p || p == s)
        return config_fail(c, v, key, "must be a non-negative amount like 4.20, got '%s'", s);
    for (; digits < 6; digits++)
        frac *= 10;
    *out = whole * 1000000 + frac;
    return 0;
}

static int want_name(struct config_ctx *c, const yaml_node_t *v, const char *key, char *dst,
                     size_t size, bool plain)
{
    const char *s = config_scalar(v);
    if (!s || !*s || strlen(s) >= size)
        return config_fail(c, v, key, "must be a string of 1 to 63 characters%s", "");
    for (const char *p = s; plain && *p; p++)
        if (!(*p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') ||
              (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return config_fail(c, v, key, "may contain only letters, digits, '-', '_' and '.', got '%s'", s);
    snprintf(dst, size, "%s", s);
    return 0;
}

/* "09:00" into minutes after midnight (24:00 allowed as the end of a day). */
static int want_clock(struct config_ctx *c, const yaml_node_t *v, const char *key, int *out)
{
    const char *s = config_scalar(v);
    int h, m;
    char extra;
    if (!s || sscanf(s, "%d:%d%c", &h, &m, &extra) != 2 || h < 0 || m < 0 || m > 59 ||
        h * 60 + m > 24 * 60)
        return config_fail(c, v, key, "must be a time like 09:00 (UTC), got '%s'", s ? s : "?");
    *out = h * 60 + m;
    return 0;
}

/* "mon-fri", "sat,sun", "all" into a bit mask (bit 0 Monday). */
static int want_days(struct config_ctx *c, const yaml_node_t *v, const char *key, unsigned *out)
{
    static const char *const names[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
    const char *s = config_scalar(v);
    if (s && !strcmp(s, "all")) {
        *out = 0x7f;
        return 0;
    }
    unsigned mask = 0;
    for (const char *p = s; p && *p;) {
        int from = -1, to = -1;
        for (int d = 0; d < 7; d++)
            if (!strncmp(p, names[d], 3))
                from = to = d;
        if (from >= 0 && p[3] == '-') {
            to = -1;
            for (int d = 0; d < 7; d++)
                if (!strncmp(p + 4, names[d], 3))
                    to = d;
            p += 4;
        }
        if (from < 0 || to < 0)
            break;
        for (int d = from;; d = (d + 1) % 7) {
            mask |= 1u << d;
            if (d == to)
                break;
        }
        p += 3;
        if (*p == ',')
            p++;
        else if (*p)
            mask = 0, p = "";
    }
    if (!mask)
        return config_fail(c, v, key, "must be days like mon-fri, sat,sun or all, got '%s'", s ? s : "?");
    *out = mask;
    return 0;
}

static int window_key(struct config_ctx *c, const char *key, const yaml_node_t *v)
{
    struct pool_window *w = &cur->windows[cur->nwindows];
    const char *k = strrchr(key, '.') + 1;
    long n;
    int rc;
    if (!strcmp(k, "days"))
        return want_days(c, v, key, &w->days);
    if (!strcmp(k, "from"))
        return want_clock(c, v, key, &w->from_min);
    if (!strcmp(k, "to"))
        return want_clock(c, v, key, &w->to_min);
    if (!strcmp(k, "min_nodes")) {
        if (!(rc = config_want_int(c, v, key, 0, 10000, &n)))
            w->min_nodes = (int)n;
        return rc;
    }
    return config_fail(c, v, key, "unknown key (known: days, from, to, min_nodes)%s", "");
}

static int step_key(struct config_ctx *c, const char *key, const yaml_node_t *v)
{
    struct pool_step *s = &cur->steps[cur->nsteps];
    const char *k = strrchr(key, '.') + 1;
    long n;
    int rc;
    if (!strcmp(k, "queue_length") || !strcmp(k, "wait_s") || !strcmp(k, "add")) {
        if ((rc = config_want_int(c, v, key, k[0] == 'a' ? 1 : 0, 100000, &n)))
            return rc;
        if (k[0] == 'q')
            s->queue_length = (int)n;
        else if (k[0] == 'w')
            s->wait_s = n;
        else
            s->add = (int)n;
        return 0;
    }
    return config_fail(c, v, key, "unknown key (known: queue_length, wait_s, add)%s", "");
}

/* schedule: and steps: lists of mappings. */
static int pool_list(struct config_ctx *c, const char *key, const yaml_node_t *v, bool windows)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return config_fail(c, v, key, "must be a list of mappings%s", "");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        const yaml_node_t *item = yaml_document_get_node(c->doc, *it);
        int *count = windows ? &cur->nwindows : &cur->nsteps;
        char where[160];
        snprintf(where, sizeof where, "%s[%d]", key, *count);
        if (*count == (windows ? POOL_MAX_WINDOWS : POOL_MAX_STEPS))
            return config_fail(c, item, where, "at most %s entries", "8");
        int rc = config_walk_mapping(c, where, item, windows ? window_key : step_key);
        if (rc)
            return rc;
        if (windows) {
            const struct pool_window *w = &cur->windows[*count];
            if (!w->days || w->from_min == w->to_min)
                return config_fail(c, item, where, "needs days and a from different from to%s", "");
        } else {
            const struct pool_step *s = &cur->steps[*count];
            if (!s->add || (!s->queue_length && !s->wait_s))
                return config_fail(c, item, where, "needs add and queue_length or wait_s%s", "");
        }
        (*count)++;
    }
    return 0;
}

static int pool_key(struct config_ctx *c, const char *key, const yaml_node_t *v)
{
    const char *k = strrchr(key, '.') + 1;
    long n;
    int rc = 0;
#define INT_KEY(NAME, LO, HI, FIELD)                                                  \
    if (!strcmp(k, NAME)) {                                                           \
        if (!(rc = config_want_int(c, v, key, LO, HI, &n)))                           \
            cur->FIELD = n;                                                           \
        return rc;                                                                    \
    }
    INT_KEY("gpus_per_node", 0, TIDE_MAX_GPUS_PER_NODE, gpus_per_node)
    INT_KEY("gpu_memory_mib", 1, 1L << 30, gpu_memory_mib)
    INT_KEY("min_nodes", 0, 10000, min_nodes)
    INT_KEY("max_nodes", 0, 10000, max_nodes)
    INT_KEY("boot_time_s", 0, 86400, boot_time_s)
    INT_KEY("boot_timeout_s", 1, 86400, boot_timeout_s)
    INT_KEY("pack_gpu_hours", 0, 100000000, pack_gpu_hours)
    INT_KEY("scale_up_delay_s", 0, 86400, scale_up_delay_s)
    INT_KEY("scale_down_utilization", 0, 100, scale_down_utilization_pct)
    INT_KEY("scale_down_window_s", 0, 30L * 86400, scale_down_window_s)
    INT_KEY("cooldown_s", 0, 86400, cooldown_s)
    INT_KEY("interruption_grace_s", 0, 3600, interruption_grace_s)
    INT_KEY("forecast_alpha_pct", 1, 100, forecast_alpha_pct)
#undef INT_KEY
    if (!strcmp(k, "predictive")) {
        const char *s = config_scalar(v);
        if (!s || (strcmp(s, "true") && strcmp(s, "false")))
            return config_fail(c, v, key, "must be true or false%s", "");
        cur->predictive = !strcmp(s, "true");
        return 0;
    }
    if (!strcmp(k, "schedule") || !strcmp(k, "steps"))
        return pool_list(c, key, v, k[1] == 'c');
    if (!strcmp(k, "name"))
        return want_name(c, v, key, cur->name, sizeof cur->name, true);
    if (!strcmp(k, "gpu"))
        return want_name(c, v, key, cur->gpu_model, sizeof cur->gpu_model, true);
    if (!strcmp(k, "driver"))
        return want_name(c, v, key, cur->driver, sizeof cur->driver, false);
    if (!strcmp(k, "region"))
        return want_name(c, v, key, cur->region, sizeof cur->region, false);
    if (!strcmp(k, "price_per_node_hour"))
        return config_want_money(c, v, key, &cur->price_per_node_hour_micros);
    if (!strcmp(k, "spot_price_per_node_hour"))
        return config_want_money(c, v, key, &cur->spot_price_per_node_hour_micros);
    if (!strcmp(k, "provider")) {
        const char *s = config_scalar(v);
        if (!s || (strcmp(s, "local") && strcmp(s, "exec")))
            return config_fail(c, v, key, "must be local or exec, got '%s'", s ? s : "?");
        snprintf(cur->provider, sizeof cur->provider, "%s", s);
        return 0;
    }
    if (!strcmp(k, "program")) {
        const char *s = config_scalar(v);
        if (!s || !*s || strlen(s) >= sizeof cur->program)
            return config_fail(c, v, key, "must be a path of at most %s characters", "511");
        snprintf(cur->program, sizeof cur->program, "%s", s);
        return 0;
    }
    if (!strcmp(k, "billing")) {
        const char *s = config_scalar(v);
        int b = s ? billing_kind_from_name(s) : -1;
        if (b < 0)
            return config_fail(c, v, key, "must be on_demand, reserved, spot or pack, got '%s'",
                               s ? s : "?");
        cur->billing = (enum billing_kind)b;
        return 0;
    }
    return config_fail(c, v, key,
                       "unknown key (known: name, gpu, gpus_per_node, gpu_memory_mib, driver, "
                       "region, provider, program, min_nodes, max_nodes, boot_time_s, "
                       "boot_timeout_s, price_per_node_hour, spot_price_per_node_hour, billing, "
                       "pack_gpu_hours, scale_up_delay_s, scale_down_utilization, "
                       "scale_down_window_s, cooldown_s, interruption_grace_s, schedule, steps, predictive, "
                       "forecast_alpha_pct)%s", "");
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
        cur = &cfg->pools[cfg->npools];
        pool_defaults(cur);
        int rc = config_walk_mapping(c, section, item, pool_key);
        if (rc)
            return rc;
        if (!cur->name[0])
            return config_fail(c, item, section, "name: is required%s", "");
        if (pool_find(cfg->pools, cfg->npools, cur->name) >= 0)
            return config_fail(c, item, section, "name: '%s' is used by another pool", cur->name);
        if (cur->min_nodes > cur->max_nodes)
            return config_fail(c, item, section, "min_nodes: must not exceed max_nodes%s", "");
        if (!strcmp(cur->provider, "exec") && !cur->program[0])
            return config_fail(c, item, section, "program: the exec provider needs one%s", "");
        cfg->npools++;
    }
    return 0;
}
