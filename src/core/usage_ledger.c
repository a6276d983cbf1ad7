/* The usage ledger and its reports (see usage_ledger.h). */
#include "core/usage_ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/array.h"
#include "core/billing.h"

#include "core/core_banned.h"

void usage_ledger_init(struct usage_ledger *l)
{
    memset(l, 0, sizeof *l);
}

void usage_ledger_release(struct usage_ledger *l)
{
    if (!l)
        return;
    free(l->days);
    free(l->uses);
    memset(l, 0, sizeof *l);
}

int usage_ledger_add_pool(struct usage_ledger *l, int64_t day, int pool, int64_t node_ms,
                          int64_t gpu_ms)
{
    /* Today's rows are at the end: search backwards. A pool's rows are in
     * day order (one meter feeds each pool, in time), but another pool's
     * late row of an earlier day may come after them: only the pool's own
     * earlier day ends the search. */
    for (size_t i = l->ndays; i-- > 0 && !(l->days[i].pool == pool && l->days[i].day < day);)
        if (l->days[i].day == day && l->days[i].pool == pool) {
            l->days[i].node_ms += node_ms;
            l->days[i].gpu_ms += gpu_ms;
            l->days[i].dirty = true;
            if (i < l->days_dirty_from)
                l->days_dirty_from = i;
            return 0;
        }
    if (array_reserve((void **)&l->days, &l->days_cap, l->ndays + 1, sizeof *l->days))
        return TIDE_ENOMEM;
    if (l->ndays < l->days_dirty_from)
        l->days_dirty_from = l->ndays;
    l->days[l->ndays++] = (struct usage_pool_day){
        .day = day, .pool = pool, .node_ms = node_ms, .gpu_ms = gpu_ms, .dirty = true};
    return 0;
}

int usage_ledger_add_use(struct usage_ledger *l, int64_t day, int pool, const char *project,
                         const char *queue, int64_t gpu_ms)
{
    return usage_ledger_add_user_use(l, day, pool, project, queue, "", gpu_ms);
}

static bool use_is(const struct usage_use *u, int64_t day, int pool, const char *project,
                   const char *queue, const char *user)
{
    return u->day == day && u->pool == pool && !strcmp(u->project, project) &&
           !strcmp(u->queue, queue) && !strcmp(u->user, user);
}

/* The index of the row of (day, pool, project, queue, user), or nuses. */
static size_t find_use(struct usage_ledger *l, int64_t day, int pool, const char *project,
                       const char *queue, const char *user)
{
    if (l->today_from < l->nuses && l->uses[l->today_from].day < day)
        l->today_from = l->nuses; /* a new day: earlier rows are not searched first */
    for (size_t i = l->today_from; i < l->nuses; i++)
        if (use_is(&l->uses[i], day, pool, project, queue, user))
            return i;
    if (l->today_from == l->nuses || day >= l->uses[l->today_from].day)
        return l->nuses;
    /* The last seconds of an earlier day, from a meter that crossed midnight
     * after another (billing and the meter of nodes joined by hand): that
     * day's row is before today's. A pool's rows are in day order, so its
     * own earlier day ends the search. */
    for (size_t i = l->today_from; i-- > 0;) {
        const struct usage_use *u = &l->uses[i];
        if (u->pool == pool && u->day < day)
            break;
        if (use_is(u, day, pool, project, queue, user))
            return i;
    }
    return l->nuses;
}

int usage_ledger_add_user_use(struct usage_ledger *l, int64_t day, int pool, const char *project,
                              const char *queue, const char *user, int64_t gpu_ms)
{
    size_t i = find_use(l, day, pool, project, queue, user);
    if (i < l->nuses) {
        struct usage_use *u = &l->uses[i];
        u->gpu_ms += gpu_ms;
        u->dirty = true;
        if (i < l->uses_dirty_from)
            l->uses_dirty_from = i;
        return 0;
    }
    if (array_reserve((void **)&l->uses, &l->uses_cap, l->nuses + 1, sizeof *l->uses))
        return TIDE_ENOMEM;
    if (l->nuses < l->uses_dirty_from)
        l->uses_dirty_from = l->nuses;
    struct usage_use *u = &l->uses[l->nuses++];
    memset(u, 0, sizeof *u);
    u->day = day;
    u->pool = pool;
    snprintf(u->project, sizeof u->project, "%s", project);
    snprintf(u->queue, sizeof u->queue, "%s", queue);
    snprintf(u->user, sizeof u->user, "%s", user);
    u->gpu_ms = gpu_ms;
    u->dirty = true;
    return 0;
}

void usage_ledger_clean(struct usage_ledger *l)
{
    for (size_t i = l->days_dirty_from; i < l->ndays; i++)
        l->days[i].dirty = false;
    for (size_t i = l->uses_dirty_from; i < l->nuses; i++)
        l->uses[i].dirty = false;
    l->days_dirty_from = l->ndays;
    l->uses_dirty_from = l->nuses;
}

int usage_group_parse(const char *list, char *bad)
{
    static const char *const names[] = {"project", "pool", "queue", "day", "user"};
    int mask = 0;
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < 5 && (strlen(names[k]) != len || strncmp(p, names[k], len)))
            k++;
        if (k == 5) {
            snprintf(bad, 32, "%.*s", (int)(len < 31 ? len : 31), p);
            return -1;
        }
        mask |= 1 << k;
        p += len;
        if (*p == ',')
            p++;
    }
    return mask;
}

/* A pool day with its cost worked out for the report. */
struct priced_day {
    const struct usage_pool_day *d;
    int64_t capacity_gpu_ms, cost_micros, used_cost_micros;
};

static int by_pool_then_day(const void *a, const void *b)
{
    const struct priced_day *x = a, *y = b;
    if (x->d->pool != y->d->pool)
        return x->d->pool < y->d->pool ? -1 : 1;
    return (x->d->day > y->d->day) - (x->d->day < y->d->day);
}

static struct priced_day *find_day(struct priced_day *days, size_t n, int pool, int64_t day)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct usage_pool_day *d = days[mid].d;
        if (d->pool < pool || (d->pool == pool && d->day < day))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && days[lo].d->pool == pool && days[lo].d->day == day ? &days[lo] : NULL;
}

static int row_cmp(const void *a, const void *b)
{
    const struct usage_row *x = a, *y = b;
    if (x->day != y->day)
        return x->day < y->day ? -1 : 1;
    if (x->pool != y->pool)
        return x->pool < y->pool ? -1 : 1;
    if (x->idle != y->idle)
        return x->idle ? 1 : -1;
    int c = strcmp(x->project, y->project);
    if (!c)
        c = strcmp(x->queue, y->queue);
    return c ? c : strcmp(x->user, y->user);
}

static int capacity_cmp(const void *a, const void *b)
{
    const struct usage_capacity *x = a, *y = b;
    if (x->day != y->day)
        return x->day < y->day ? -1 : 1;
    return (x->pool > y->pool) - (x->pool < y->pool);
}

static int add_row(struct usage_report *r, unsigned group, const struct usage_pool_day *d,
                   const char *project, const char *queue, const char *user, bool idle,
                   int64_t gpu_ms, int64_t cost)
{
    if (array_reserve((void **)&r->rows, &r->rows_cap, r->nrows + 1, sizeof *r->rows))
        return TIDE_ENOMEM;
    struct usage_row *row = &r->rows[r->nrows++];
    memset(row, 0, sizeof *row);
    if (group & USAGE_BY_PROJECT)
        snprintf(row->project, sizeof row->project, "%s", project);
    if (group & USAGE_BY_QUEUE)
        snprintf(row->queue, sizeof row->queue, "%s", queue);
    if (group & USAGE_BY_USER)
        snprintf(row->user, sizeof row->user, "%s", user);
    row->pool = group & USAGE_BY_POOL ? d->pool : -1;
    row->day = group & USAGE_BY_DAY ? d->day : -1;
    row->idle = idle;
    row->gpu_ms = gpu_ms;
    row->cost_micros = cost;
    return 0;
}

/* Sorts rows and folds rows with equal keys into one. */
static void merge_rows(struct usage_report *r)
{
    if (r->nrows == 0)
        return; /* rows may be NULL: qsort's base must not be */
    qsort(r->rows, r->nrows, sizeof *r->rows, row_cmp);
    size_t out = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        if (out && !row_cmp(&r->rows[out - 1], &r->rows[i])) {
            r->rows[out - 1].gpu_ms += r->rows[i].gpu_ms;
            r->rows[out - 1].cost_micros += r->rows[i].cost_micros;
        } else {
            r->rows[out++] = r->rows[i];
        }
    }
    r->nrows = out;
}

/* What no use of day p bore; never below 0 (each use is capped at the
 * day's capacity alone, so together they may claim more than it). */
static int64_t idle_cost(const struct priced_day *p)
{
    return p->cost_micros > p->used_cost_micros ? p->cost_micros - p->used_cost_micros : 0;
}

static int add_capacity(struct usage_report *r, unsigned group, const struct priced_day *p)
{
    struct usage_capacity c = {
        .pool = group & USAGE_BY_POOL ? p->d->pool : -1,
        .day = group & USAGE_BY_DAY ? p->d->day : -1,
        .provisioned_gpu_ms = p->capacity_gpu_ms,
        .used_gpu_ms = p->d->gpu_ms < p->capacity_gpu_ms ? p->d->gpu_ms : p->capacity_gpu_ms,
        .cost_micros = p->cost_micros,
        .idle_cost_micros = idle_cost(p),
    };
    struct usage_capacity *t = &r->total;
    t->provisioned_gpu_ms += c.provisioned_gpu_ms;
    t->used_gpu_ms += c.used_gpu_ms;
    t->cost_micros += c.cost_micros;
    t->idle_cost_micros += c.idle_cost_micros;
    for (size_t i = 0; i < r->ncapacity; i++) {
        struct usage_capacity *e = &r->capacity[i];
        if (e->pool == c.pool && e->day == c.day) {
            e->provisioned_gpu_ms += c.provisioned_gpu_ms;
            e->used_gpu_ms += c.used_gpu_ms;
            e->cost_micros += c.cost_micros;
            e->idle_cost_micros += c.idle_cost_micros;
            return 0;
        }
    }
    if (array_reserve((void **)&r->capacity, &r->capacity_cap, r->ncapacity + 1,
                      sizeof *r->capacity))
        return TIDE_ENOMEM;
    r->capacity[r->ncapacity++] = c;
    return 0;
}

/* Prices every pool day in pool and day order, each on top of the pool's
 * earlier days. */
static struct priced_day *price_days(const struct usage_ledger *l, const struct pool *pools,
                                     int npools)
{
    struct priced_day *days = calloc(l->ndays ? l->ndays : 1, sizeof *days);
    if (!days)
        return NULL;
    for (size_t i = 0; i < l->ndays; i++)
        days[i].d = &l->days[i];
    qsort(days, l->ndays, sizeof *days, by_pool_then_day);
    int64_t before = 0;
    for (size_t i = 0; i < l->ndays; i++) {
        const struct usage_pool_day *d = days[i].d;
        if (i == 0 || days[i - 1].d->pool != d->pool)
            before = 0;
        if (d->pool < 0 || d->pool >= npools)
            continue;
        const struct pool *p = &pools[d->pool];
        days[i].capacity_gpu_ms = d->node_ms * (p->gpus_per_node > 0 ? p->gpus_per_node : 1);
        days[i].cost_micros =
            billing_pool_cost_at(p, before + d->node_ms) - billing_pool_cost_at(p, before);
        before += d->node_ms;
    }
    return days;
}

int usage_ledger_report(const struct usage_ledger *l, const struct pool *pools, int npools,
                        unsigned group, int64_t from_day, int64_t to_day, const char *project,
                        struct usage_report *out)
{
    memset(out, 0, sizeof *out);
    out->total.pool = -1;
    out->total.day = -1;
    struct priced_day *days = price_days(l, pools, npools);
    if (!days)
        return TIDE_ENOMEM;
    int rc = 0;
    for (size_t i = 0; !rc && i < l->nuses; i++) {
        const struct usage_use *u = &l->uses[i];
        if (u->day < from_day || u->day > to_day)
            continue;
        struct priced_day *d = find_day(days, l->ndays, u->pool, u->day);
        if (!d || d->capacity_gpu_ms <= 0)
            continue;
        int64_t used = u->gpu_ms < d->capacity_gpu_ms ? u->gpu_ms : d->capacity_gpu_ms;
        int64_t cost = (int64_t)((__int128)d->cost_micros * used / d->capacity_gpu_ms);
        d->used_cost_micros += cost; /* every project's, for the idle cost */
        if (!project || !strcmp(u->project, project))
            rc = add_row(out, group, d->d, u->project, u->queue, u->user, false, u->gpu_ms, cost);
    }
    for (size_t i = 0; !rc && i < l->ndays; i++) {
        const struct priced_day *d = &days[i];
        if (d->d->day < from_day || d->d->day > to_day || d->d->pool < 0 || d->d->pool >= npools)
            continue;
        int64_t idle_ms = d->capacity_gpu_ms - d->d->gpu_ms;
        int64_t idle = idle_cost(d);
        if (idle_ms > 0 || idle > 0)
            rc = add_row(out, group, d->d, "", "", "", true, idle_ms > 0 ? idle_ms : 0, idle);
        if (!rc)
            rc = add_capacity(out, group, d);
    }
    free(days);
    if (rc) {
        usage_report_release(out);
        return rc;
    }
    merge_rows(out);
    if (out->ncapacity)
        qsort(out->capacity, out->ncapacity, sizeof *out->capacity, capacity_cmp);
    return 0;
}

void usage_report_release(struct usage_report *r)
{
    if (!r)
        return;
    free(r->rows);
    free(r->capacity);
    memset(r, 0, sizeof *r);
}
