/* The keys of a pools: entry, shared by tide.yaml and tide sim (see pool_spec.h). */
#include "core/pool_spec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse_scalar.h"
#include "common/tide_err.h"
#include "core/core_banned.h"

const char pool_spec_keys[] =
    "name, gpu, gpus_per_node, gpu_memory_mib, driver, region, provider, program, nodes, "
    "min_nodes, max_nodes, boot_time_s, boot_timeout_s, list_interval_s, price_per_gpu_hour, "
    "price_per_node_hour, spot_price_per_node_hour, billing, pack_gpu_hours, scale_up_delay_s, "
    "scale_down_utilization, scale_down_window_s, cooldown_s, interruption_grace_s, schedule, "
    "steps, predictive, forecast_alpha_pct, health_command, health_interval_s, images, "
    "pull_time_s";

static int fail(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return TIDE_EINVAL;
}

void pool_spec_init(struct pool_spec *s)
{
    memset(s, 0, sizeof *s);
    pool_defaults(&s->pool);
    s->nodes = -1;
    s->price_per_gpu_hour_micros = -1;
}

int pool_parse_money_micros(const char *s, int64_t *out)
{
    int64_t whole = 0, frac = 0;
    int digits = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (*p - '0');
        if (whole > 1000000000)
            return -1;
    }
    if (*p == '.' && p > s)
        for (p++; *p >= '0' && *p <= '9'; p++) {
            if (++digits > 6)
                return -1; /* finer than a millionth: refuse rather than round money */
            frac = frac * 10 + (*p - '0');
        }
    if (*p || p == s)
        return -1;
    for (; digits < 6; digits++)
        frac *= 10;
    *out = whole * 1000000 + frac;
    return 0;
}

static int want_int(const char *text, long long lo, long long hi, long long *out, char *why,
                    size_t size)
{
    if (!text)
        return fail(why, size, "must be a number");
    long long n;
    int rc = parse_scalar_int(text, &n);
    if (rc == -EINVAL)
        return fail(why, size, "must be an integer, got '%s'", text);
    if (rc || n < lo || n > hi)
        return fail(why, size, "must be from %lld to %lld, got %.40s", lo, hi, text);
    *out = n;
    return 0;
}

static int want_bool(const char *text, bool *out, char *why, size_t size)
{
    if (!text || parse_scalar_bool(text, out))
        return fail(why, size, "must be true or false, got '%s'",
                    text ? text : "a list or mapping");
    return 0;
}

/* plain: a name that ends up in node names and URLs (letters, digits, -_.);
 * else any text, empty too (region: ""). */
static int want_name(const char *text, bool plain, char *dst, size_t dst_size, char *why,
                     size_t size)
{
    if (!text || (plain && !*text) || strlen(text) >= dst_size)
        return fail(why, size, "must be a string of %d to %zu characters", plain ? 1 : 0,
                    dst_size - 1);
    for (const char *p = text; plain && *p; p++)
        if (!(*p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') ||
              (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return fail(why, size, "may contain only letters, digits, '-', '_' and '.', got '%s'",
                        text);
    snprintf(dst, dst_size, "%s", text);
    return 0;
}

static int want_money(const char *text, int64_t *out, char *why, size_t size)
{
    if (!text || pool_parse_money_micros(text, out) != 0)
        return fail(why, size,
                    "must be an amount from 0 to 1000000000 with at most 6 decimals, like 4.20, "
                    "got '%s'",
                    text ? text : "?");
    return 0;
}

/* The integer keys: name, bounds, where in struct pool, and whether only
 * an elastic pool has them (the simulator's fixed pools do not). */
static const struct {
    const char *key;
    long long lo, hi;
    size_t off;
    bool is_int; /* else int64_t */
    bool elastic;
} int_keys[] = {
    {"gpus_per_node", 0, TIDE_MAX_GPUS_PER_NODE, offsetof(struct pool, gpus_per_node), true, false},
    {"gpu_memory_mib", 1, 1LL << 30, offsetof(struct pool, gpu_memory_mib), false, false},
    {"min_nodes", 0, 10000, offsetof(struct pool, min_nodes), true, true},
    {"max_nodes", 0, 10000, offsetof(struct pool, max_nodes), true, true},
    {"boot_time_s", 0, 86400, offsetof(struct pool, boot_time_s), false, true},
    {"boot_timeout_s", 1, 86400, offsetof(struct pool, boot_timeout_s), false, true},
    {"list_interval_s", 1, 86400, offsetof(struct pool, list_interval_s), false, true},
    {"pull_time_s", 0, 86400, offsetof(struct pool, pull_time_s), false, true},
    {"pack_gpu_hours", 0, 100000000, offsetof(struct pool, pack_gpu_hours), false, true},
    {"scale_up_delay_s", 0, 86400, offsetof(struct pool, scale_up_delay_s), false, true},
    {"scale_down_utilization", 0, 100, offsetof(struct pool, scale_down_utilization_pct), true,
     true},
    {"scale_down_window_s", 0, 30LL * 86400, offsetof(struct pool, scale_down_window_s), false,
     true},
    {"cooldown_s", 0, 86400, offsetof(struct pool, cooldown_s), false, true},
    {"interruption_grace_s", 0, 3600, offsetof(struct pool, interruption_grace_s), false, true},
    {"forecast_alpha_pct", 1, 100, offsetof(struct pool, forecast_alpha_pct), true, true},
    {"health_interval_s", 1, 86400, offsetof(struct pool, health_interval_s), false, false},
};

static void saw_elastic(struct pool_spec *s, const char *key)
{
    if (!s->first_elastic)
        s->first_elastic = key;
}

int pool_spec_set(struct pool_spec *s, const char *key, const char *text, char *why,
                  size_t why_size)
{
    struct pool *p = &s->pool;
    for (size_t k = 0; k < sizeof int_keys / sizeof int_keys[0]; k++) {
        if (strcmp(key, int_keys[k].key))
            continue;
        long long n;
        int rc = want_int(text, int_keys[k].lo, int_keys[k].hi, &n, why, why_size);
        if (rc)
            return rc;
        char *dst = (char *)p + int_keys[k].off;
        if (int_keys[k].is_int)
            *(int *)dst = (int)n;
        else
            *(int64_t *)dst = n;
        if (int_keys[k].elastic)
            saw_elastic(s, int_keys[k].key);
        s->min_nodes_set |= !strcmp(key, "min_nodes");
        s->max_nodes_set |= !strcmp(key, "max_nodes");
        return 0;
    }
    if (!strcmp(key, "nodes")) {
        long long n;
        int rc = want_int(text, 0, 10000, &n, why, why_size);
        if (!rc)
            s->nodes = (int)n;
        return rc;
    }
    if (!strcmp(key, "name"))
        return want_name(text, true, p->name, sizeof p->name, why, why_size);
    if (!strcmp(key, "gpu"))
        return want_name(text, true, p->gpu_model, sizeof p->gpu_model, why, why_size);
    if (!strcmp(key, "driver"))
        return text && !*text ? fail(why, why_size, "must not be empty")
                              : want_name(text, false, p->driver, sizeof p->driver, why, why_size);
    if (!strcmp(key, "region"))
        return want_name(text, false, p->region, sizeof p->region, why, why_size);
    if (!strcmp(key, "provider")) {
        if (!text || (strcmp(text, "local") && strcmp(text, "exec")))
            return fail(why, why_size, "must be local or exec, got '%s'", text ? text : "?");
        snprintf(p->provider, sizeof p->provider, "%s", text);
        return 0;
    }
    if (!strcmp(key, "health_command")) {
        if (!text || !*text || strlen(text) >= sizeof p->health_command)
            return fail(why, why_size, "must be a command of 1 to %zu characters",
                        sizeof p->health_command - 1);
        snprintf(p->health_command, sizeof p->health_command, "%s", text);
        return 0;
    }
    if (!strcmp(key, "program")) {
        if (!text || strlen(text) >= sizeof p->program) /* "": none (local) */
            return fail(why, why_size, "must be a path of at most %zu characters",
                        sizeof p->program - 1);
        snprintf(p->program, sizeof p->program, "%s", text);
        return 0;
    }
    if (!strcmp(key, "price_per_gpu_hour"))
        return want_money(text, &s->price_per_gpu_hour_micros, why, why_size);
    if (!strcmp(key, "price_per_node_hour") || !strcmp(key, "spot_price_per_node_hour")) {
        bool spot = key[0] == 's';
        int rc = want_money(
            text, spot ? &p->spot_price_per_node_hour_micros : &p->price_per_node_hour_micros, why,
            why_size);
        if (!rc && !spot)
            s->price_per_node_hour_set = true;
        if (!rc)
            saw_elastic(s, spot ? "spot_price_per_node_hour" : "price_per_node_hour");
        return rc;
    }
    if (!strcmp(key, "billing")) {
        int b = text ? billing_kind_from_name(text) : -1;
        if (b < 0)
            return fail(why, why_size, "must be on_demand, reserved, spot or pack, got '%s'",
                        text ? text : "?");
        p->billing = (enum billing_kind)b;
        saw_elastic(s, "billing");
        return 0;
    }
    if (!strcmp(key, "predictive")) {
        int rc = want_bool(text, &p->predictive, why, why_size);
        if (!rc)
            saw_elastic(s, "predictive");
        return rc;
    }
    return POOL_SPEC_UNKNOWN;
}

int pool_spec_image_add(struct pool_spec *s, const char *text, char *why, size_t why_size)
{
    struct pool *p = &s->pool;
    if (!text || !*text || strlen(text) >= POOL_IMAGE_MAX)
        return fail(why, why_size, "must be an image reference of 1 to %d characters",
                    POOL_IMAGE_MAX - 1);
    for (const char *c = text; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f)
            return fail(why, why_size, "must not contain spaces or control characters");
    if (text[0] == '-')
        return fail(why, why_size, "must not start with '-', got '%s'", text);
    if (p->nimages == POOL_MAX_IMAGES)
        return fail(why, why_size, "at most %d images", POOL_MAX_IMAGES);
    snprintf(p->images[p->nimages++], POOL_IMAGE_MAX, "%s", text);
    saw_elastic(s, "images");
    return 0;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* "09:00" into minutes after midnight (24:00 allowed as the end of a day).
 * Exactly HH:MM: sscanf would also take "-0:30", " 9: 5" or "+9:05". */
static int want_clock(const char *text, int *out, char *why, size_t size)
{
    bool ok = text && strlen(text) == 5 && is_digit(text[0]) && is_digit(text[1]) &&
              text[2] == ':' && is_digit(text[3]) && is_digit(text[4]);
    int h = ok ? (text[0] - '0') * 10 + (text[1] - '0') : 0;
    int m = ok ? (text[3] - '0') * 10 + (text[4] - '0') : 0;
    if (!ok || m > 59 || h * 60 + m > 24 * 60)
        return fail(why, size, "must be a time like 09:00 (HH:MM, UTC), got '%s'",
                    text ? text : "?");
    *out = h * 60 + m;
    return 0;
}

/* The day (0 Monday) whose name p starts with, or -1. */
static int day_at(const char *p)
{
    static const char *const names[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
    for (int d = 0; d < 7; d++)
        if (!strncmp(p, names[d], 3))
            return d;
    return -1;
}

/* "mon-fri", "sat,sun", "all" into a bit mask (bit 0 Monday). Every item
 * of the list must be a day or a range: one that is not refuses the list,
 * rather than ending it with the days read so far. */
static int want_days(const char *text, unsigned *out, char *why, size_t size)
{
    if (text && !strcmp(text, "all")) {
        *out = 0x7f;
        return 0;
    }
    unsigned mask = 0;
    for (const char *p = text; p;) {
        int from = day_at(p), to = from;
        const char *end = from >= 0 ? p + 3 : p;
        if (from >= 0 && *end == '-') {
            to = day_at(end + 1);
            end += 4;
        }
        if (from < 0 || to < 0 || (*end && *end != ',')) {
            mask = 0;
            break;
        }
        for (int d = from;; d = (d + 1) % 7) {
            mask |= 1u << d;
            if (d == to)
                break;
        }
        p = *end ? end + 1 : NULL; /* after a comma another item must follow */
    }
    if (!mask)
        return fail(why, size, "must be days like mon-fri, sat,sun or all, got '%s'",
                    text ? text : "?");
    *out = mask;
    return 0;
}

int pool_spec_window_set(struct pool_window *w, const char *key, const char *text, char *why,
                         size_t why_size)
{
    if (!strcmp(key, "days"))
        return want_days(text, &w->days, why, why_size);
    if (!strcmp(key, "from"))
        return want_clock(text, &w->from_min, why, why_size);
    if (!strcmp(key, "to"))
        return want_clock(text, &w->to_min, why, why_size);
    if (!strcmp(key, "min_nodes")) {
        long long n;
        int rc = want_int(text, 0, 10000, &n, why, why_size);
        if (!rc)
            w->min_nodes = (int)n;
        return rc;
    }
    return fail(why, why_size, "unknown key (known: days, from, to, min_nodes)");
}

int pool_spec_step_set(struct pool_step *st, const char *key, const char *text, char *why,
                       size_t why_size)
{
    if (strcmp(key, "queue_length") && strcmp(key, "wait_s") && strcmp(key, "add"))
        return fail(why, why_size, "unknown key (known: queue_length, wait_s, add)");
    long long n = 0;
    int rc = want_int(text, key[0] == 'a' ? 1 : 0, 100000, &n, why, why_size);
    if (rc)
        return rc;
    if (key[0] == 'q')
        st->queue_length = (int)n;
    else if (key[0] == 'w')
        st->wait_s = n;
    else
        st->add = (int)n;
    return 0;
}

int pool_spec_window_check(const struct pool_window *w, char *why, size_t why_size)
{
    if (!w->days || w->from_min == w->to_min)
        return fail(why, why_size, "needs days and a from different from to");
    return 0;
}

int pool_spec_step_check(const struct pool_step *st, char *why, size_t why_size)
{
    if (!st->add || (!st->queue_length && !st->wait_s))
        return fail(why, why_size, "needs add and queue_length or wait_s");
    return 0;
}

bool pool_spec_sim_only(const char *key)
{
    static const char *const keys[] = {"interruptions_per_node_hour", "interruptions",
                                       "provider_failure_rate", "provider_failed_calls"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(key, keys[i]))
            return true;
    return false;
}

int pool_spec_finish(struct pool_spec *s, const char **key, char *why, size_t why_size)
{
    struct pool *p = &s->pool;
    if (!p->name[0]) {
        *key = "name";
        return fail(why, why_size, "is required");
    }
    if (s->nodes >= 0) {
        if (s->min_nodes_set || s->max_nodes_set) {
            *key = "nodes";
            return fail(why, why_size,
                        "is for fixed-size pools; an elastic pool has min_nodes and max_nodes");
        }
        p->min_nodes = p->max_nodes = s->nodes;
    }
    if (p->min_nodes > p->max_nodes) {
        *key = "min_nodes";
        return fail(why, why_size, "must not exceed max_nodes (%d)", p->max_nodes);
    }
    if (pool_boot_estimate_s(p) >= p->boot_timeout_s && p->pull_time_s) {
        *key = "pull_time_s";
        return fail(why, why_size, "with boot_time_s (%llds) must be under boot_timeout_s (%llds)",
                    (long long)p->boot_time_s, (long long)p->boot_timeout_s);
    }
    if (p->boot_time_s >= p->boot_timeout_s) {
        *key = "boot_time_s";
        return fail(why, why_size, "must be under boot_timeout_s (%lld)",
                    (long long)p->boot_timeout_s);
    }
    if (!strcmp(p->provider, "exec") && !p->program[0]) {
        *key = "program";
        return fail(why, why_size, "the exec provider needs one");
    }
    if (s->price_per_gpu_hour_micros >= 0 && !s->price_per_node_hour_set)
        p->price_per_node_hour_micros = s->price_per_gpu_hour_micros * p->gpus_per_node;
    return 0;
}
