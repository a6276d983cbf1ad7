/* Job id lists and ranges (see id_list.h). */
#include "cli/id_list.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cli_id_list_init(struct cli_id_list *l)
{
    memset(l, 0, sizeof *l);
}

void cli_id_list_release(struct cli_id_list *l)
{
    if (!l)
        return;
    free(l->ids);
    memset(l, 0, sizeof *l);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int cli_id_list_has(const struct cli_id_list *l, long long id)
{
    return l->n && bsearch(&id, l->ids, l->n, sizeof id, cmp_ll) != NULL;
}

/* Sorts l and drops repeats. */
static void sort_unique(struct cli_id_list *l)
{
    if (l->n < 2)
        return;
    qsort(l->ids, l->n, sizeof l->ids[0], cmp_ll);
    size_t k = 1;
    for (size_t i = 1; i < l->n; i++)
        if (l->ids[i] != l->ids[k - 1])
            l->ids[k++] = l->ids[i];
    l->n = k;
}

/* Appends id (repeats are dropped when the argument is done). */
static int append(struct cli_id_list *l, long long id, struct tide_err *err)
{
    if (l->n == 2 * CLI_ID_LIST_MAX)
        return tide_err_set(err, TIDE_EINVAL, NULL, "at most %d job ids at a time",
                            CLI_ID_LIST_MAX);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        long long *grown = realloc(l->ids, cap * sizeof *grown);
        if (!grown)
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        l->ids = grown;
        l->cap = cap;
    }
    l->ids[l->n++] = id;
    return 0;
}

int cli_id_list_add(struct cli_id_list *l, long long id, struct tide_err *err)
{
    if (cli_id_list_has(l, id))
        return 0;
    int rc = append(l, id, err);
    if (rc == 0)
        sort_unique(l);
    if (rc == 0 && l->n > CLI_ID_LIST_MAX)
        rc = tide_err_set(err, TIDE_EINVAL, NULL, "at most %d job ids at a time", CLI_ID_LIST_MAX);
    return rc;
}

/* Reads a positive decimal id from [s, end); digits only. */
static int read_id(const char *s, const char *end, long long *out)
{
    if (s == end || end - s > 18)
        return -1;
    long long v = 0;
    for (const char *p = s; p < end; p++) {
        if (!isdigit((unsigned char)*p))
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (v <= 0)
        return -1;
    *out = v;
    return 0;
}

/* One item of a comma list: "45" or "45-47", len bytes at s. */
static int parse_item(struct cli_id_list *l, const char *s, size_t len, struct tide_err *err)
{
    const char *end = s + len;
    const char *dash = memchr(s, '-', len);
    long long lo, hi;
    if (len == 0)
        return tide_err_set(err, TIDE_EINVAL, NULL,
                            "job ids: empty item in the list (write 45,46 or 45-47)");
    if (!dash) {
        if (read_id(s, end, &lo) < 0)
            return tide_err_set(err, TIDE_EINVAL, NULL, "job ids: '%.*s' is not a job id", (int)len,
                                s);
        return append(l, lo, err);
    }
    if (read_id(s, dash, &lo) < 0 || read_id(dash + 1, end, &hi) < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL,
                            "job ids: '%.*s' is not a range FIRST-LAST of job ids", (int)len, s);
    if (hi < lo)
        return tide_err_set(err, TIDE_EINVAL, NULL,
                            "job ids: range '%.*s' ends before it starts (write %lld-%lld)",
                            (int)len, s, hi, lo);
    if (hi - lo >= CLI_ID_LIST_MAX)
        return tide_err_set(err, TIDE_EINVAL, NULL, "job ids: range '%.*s' has more than %d ids",
                            (int)len, s, CLI_ID_LIST_MAX);
    for (long long id = lo; id <= hi; id++) {
        int rc = append(l, id, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int cli_id_list_parse(struct cli_id_list *l, const char *s, struct tide_err *err)
{
    if (!*s)
        return tide_err_set(err, TIDE_EINVAL, NULL, "job ids: empty argument");
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        int rc = parse_item(l, s, len, err);
        if (rc < 0)
            return rc;
        if (!comma)
            break;
        s = comma + 1;
    }
    sort_unique(l);
    if (l->n > CLI_ID_LIST_MAX)
        return tide_err_set(err, TIDE_EINVAL, NULL, "at most %d job ids at a time",
                            CLI_ID_LIST_MAX);
    return 0;
}
