/* `tide usage`: GPU-hours and cost by project, pool, queue and day from
 * GET /v1/usage, as a table, CSV or JSON; `--share` shows the fair-share
 * view instead (GET /v1/projects). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "cli/table.h"
#include "cli/usage_share.h"

static const char usage_usage[] =
    "usage: tide usage [--by KEYS] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--project P]\n"
    "                  [--csv | --json] [--share] [--server URL] [--token T]\n"
    "\n"
    "GPU-hours used and what they cost, from the server's metering of every node,\n"
    "grouped by KEYS: a comma list of project, pool, queue, day and user (the name\n"
    "of the token that submitted the job) (default: project). Nodes joined by hand\n"
    "are metered as pool \"(static)\" at cost 0. Days are UTC; --from and --to are\n"
    "inclusive (default: all days). Cost or GPU time no job used is\n"
    "shown as (idle) rows, and when grouping by pool or day a second table gives\n"
    "each group's provisioned GPU-hours, utilisation, cost and idle cost. Money is\n"
    "in the pools' price unit.\n"
    "\n"
    "  --csv     the rows as CSV (a header line, then one line per row)\n"
    "  --json    the API's answer (rows, capacity, total)\n"
    "  --share   instead: each project's GPU quota, weight, GPUs in use, borrowed\n"
    "            beyond its quota, pending jobs and decayed recent use (fair share)\n";

enum { OPT_BY = 1, OPT_FROM, OPT_TO, OPT_PROJECT, OPT_CSV, OPT_SHARE };

static const struct cli_opt usage_opts[] = {
    CLI_COMMON_OPTS,
    {"--by", CLI_OPT_VALUE, OPT_BY},
    {"--from", CLI_OPT_VALUE, OPT_FROM},
    {"--to", CLI_OPT_VALUE, OPT_TO},
    {"--project", CLI_OPT_VALUE, OPT_PROJECT},
    {"--csv", CLI_OPT_FLAG, OPT_CSV},
    {"--share", CLI_OPT_FLAG, OPT_SHARE},
    {NULL, 0, 0},
};

#define NKEYS 5
static const char *const key_names[NKEYS] = {"project", "queue", "user", "pool", "day"};
static const char *const key_headers[NKEYS] = {"PROJECT", "QUEUE", "USER", "POOL", "DAY"};

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Which of key_names the answer is grouped by. */
static int grouped_keys(json_t *root, const char **keys)
{
    int n = 0;
    json_t *by = json_object_get(root, "by");
    for (int k = 0; k < NKEYS; k++) {
        size_t i;
        json_t *v;
        json_array_foreach(by, i, v) if (!strcmp(json_string_value(v), key_names[k])) keys[n++] = key_names[k];
    }
    return n;
}

static void csv_cell(FILE *out, const char *s, bool last)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', out);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', out);
            fputc(*s, out);
        }
        fputc('"', out);
    } else {
        fputs(s, out);
    }
    fputc(last ? '\n' : ',', out);
}

static int print_csv(json_t *root)
{
    const char *keys[NKEYS];
    int nkeys = grouped_keys(root, keys);
    for (int k = 0; k < nkeys; k++)
        csv_cell(stdout, keys[k], false);
    fputs("idle,gpu_hours,cost\n", stdout);
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(root, "rows"), i, row)
    {
        for (int k = 0; k < nkeys; k++)
            csv_cell(stdout, str(row, keys[k]), false);
        printf("%s,%.6f,", json_is_true(json_object_get(row, "idle")) ? "true" : "false",
               json_number_value(json_object_get(row, "gpu_hours")));
        csv_cell(stdout, str(row, "cost"), true);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Idle rows are told apart by their project or queue "(idle)"; without
 * those keys a USE column says it. */
static int print_rows(json_t *root)
{
    const char *keys[NKEYS], *headers[NKEYS + 3];
    int nkeys = grouped_keys(root, keys), ncols = 0;
    bool use_col = true;
    for (int k = 0; k < nkeys; k++)
        for (int h = 0; h < NKEYS; h++)
            if (!strcmp(keys[k], key_names[h])) {
                headers[ncols++] = key_headers[h];
                use_col &= h >= 3; /* project, queue and user say "(idle)" themselves */
            }
    if (use_col)
        headers[ncols++] = "USE";
    headers[ncols++] = "GPU-H";
    headers[ncols++] = "COST";
    struct cli_table *t = cli_table_create((size_t)ncols, headers);
    if (!t)
        return 1;
    int rc = 0;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(root, "rows"), i, row)
    {
        const char *cells[NKEYS + 3];
        char hours[32];
        int n = 0;
        for (int k = 0; k < nkeys; k++)
            cells[n++] = str(row, keys[k]);
        if (use_col)
            cells[n++] = json_is_true(json_object_get(row, "idle")) ? "idle" : "jobs";
        snprintf(hours, sizeof hours, "%.2f", json_number_value(json_object_get(row, "gpu_hours")));
        cells[n++] = hours;
        cells[n++] = str(row, "cost");
        if (cli_table_add(t, cells) != 0)
            rc = 1;
    }
    if (!rc && cli_table_rows(t) == 0)
        printf("no usage metered yet\n");
    else if (!rc)
        rc = cli_table_print(t, stdout);
    cli_table_destroy(t);
    return rc;
}

static int print_capacity(json_t *root)
{
    json_t *cap = json_object_get(root, "capacity");
    int keyed = json_array_size(cap) > 0 &&
                (json_object_get(json_array_get(cap, 0), "pool") ||
                 json_object_get(json_array_get(cap, 0), "day"));
    if (!keyed)
        return 0;
    static const char *const headers[] = {"POOL", "DAY", "PROVISIONED-GPU-H", "USED-GPU-H",
                                          "UTIL", "COST", "IDLE-COST"};
    struct cli_table *t = cli_table_create(7, headers);
    if (!t)
        return 1;
    int rc = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cap, i, c)
    {
        char prov[32], used[32], util[16];
        snprintf(prov, sizeof prov, "%.2f", json_number_value(json_object_get(c, "provisioned_gpu_hours")));
        snprintf(used, sizeof used, "%.2f", json_number_value(json_object_get(c, "used_gpu_hours")));
        json_t *u = json_object_get(c, "utilisation");
        snprintf(util, sizeof util, json_is_number(u) ? "%.1f%%" : "-", json_number_value(u) * 100.0);
        const char *cells[] = {json_object_get(c, "pool") ? str(c, "pool") : "*",
                               json_object_get(c, "day") ? str(c, "day") : "*",
                               prov, used, util, str(c, "cost"), str(c, "idle_cost")};
        if (cli_table_add(t, cells) != 0)
            rc = 1;
    }
    if (!rc) {
        putchar('\n');
        rc = cli_table_print(t, stdout);
    }
    cli_table_destroy(t);
    return rc;
}

static int print_usage(json_t *root)
{
    int rc = print_rows(root);
    if (!rc)
        rc = print_capacity(root);
    json_t *total = json_object_get(root, "total");
    if (!rc && json_is_object(total)) {
        json_t *u = json_object_get(total, "utilisation");
        char util[16];
        snprintf(util, sizeof util, json_is_number(u) ? "%.1f%%" : "-", json_number_value(u) * 100.0);
        printf("\ntotal: %.2f GPU-hours provisioned, %.2f used (%s), cost %s, idle %s\n",
               json_number_value(json_object_get(total, "provisioned_gpu_hours")),
               json_number_value(json_object_get(total, "used_gpu_hours")), util, str(total, "cost"),
               str(total, "idle_cost"));
    }
    return rc || fflush(stdout) != 0;
}

int cli_usage_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    const char *by = NULL, *from = NULL, *to = NULL, *project = NULL, *v;
    int csv = 0, share = 0, id, r;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, usage_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            return cli_usage_fail("usage", &err);
        if (r == CLI_ARGS_POSITIONAL) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
            return cli_usage_fail("usage", &err);
        }
        if (cli_common_apply(&co, id, v))
            continue;
        switch (id) {
        case OPT_BY: by = v; break;
        case OPT_FROM: from = v; break;
        case OPT_TO: to = v; break;
        case OPT_PROJECT: project = v; break;
        case OPT_CSV: csv = 1; break;
        case OPT_SHARE: share = 1; break;
        }
    }
    if (co.help) {
        fputs(usage_usage, stdout);
        return 0;
    }
    if (csv && co.json) {
        tide_err_set(&err, TIDE_EINVAL, "--csv", "--csv and --json: choose one");
        return cli_usage_fail("usage", &err);
    }
    if (share && (by || from || to || project || csv)) {
        tide_err_set(&err, TIDE_EINVAL, "--share", "--share takes no --by, --from, --to, --project or --csv");
        return cli_usage_fail("usage", &err);
    }
    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0)
        return cli_fail("usage", &err);
    const char *query[] = {"by", by, "from", from, "to", to, "project", project, NULL};
    char *path = share ? NULL : cli_path_with_query("/v1/usage", query);
    const char *target = share ? "/v1/projects" : path;
    int rc;
    json_t *root;
    if (!target) {
        tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
        rc = cli_fail("usage", &err);
    } else if (c.json) {
        rc = cli_request_and_print(&c, "GET", target, NULL, &err) < 0 ? cli_fail("usage", &err) : 0;
    } else if (cli_client_request_json(&c, "GET", target, NULL, &root, &err) < 0) {
        rc = cli_fail("usage", &err);
    } else {
        rc = share ? cli_usage_share_print(root) : csv ? print_csv(root) : print_usage(root);
        json_decref(root);
    }
    free(path);
    cli_client_release(&c);
    return rc;
}
