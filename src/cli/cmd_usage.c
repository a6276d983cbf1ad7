/* `tide usage`: each project's GPU quota, what it uses and borrows, and its
 * decayed use that fair share orders borrowers by. */
#include <stdio.h>

#include "cli/client.h"
#include "cli/report.h"
#include "cli/list_command.h"
#include "cli/roles.h"
#include "cli/table.h"

static const char usage_usage[] =
    "usage: tide usage [--json] [--server URL] [--token T]\n"
    "\n"
    "Lists projects with their GPU quota and weight, GPUs in use now, how many of\n"
    "those are borrowed beyond the quota (and may be taken back), pending jobs, and\n"
    "recent use in GPU-hours (decayed with the configured half-life).\n";

static int print_usage(json_t *root)
{
    static const char *const headers[] = {"PROJECT", "QUOTA", "WEIGHT", "IN-USE",
                                          "BORROWED", "PENDING", "RECENT-GPU-H"};
    struct cli_table *t = cli_table_create(7, headers);
    if (!t)
        return 1;
    size_t i;
    json_t *p;
    int rc = 0;
    json_array_foreach(json_object_get(root, "projects"), i, p)
    {
        char quota[16], weight[16], used[16], borrowed[16], pending[16], recent[32];
#define INT(key) (long long)json_integer_value(json_object_get(p, key))
        snprintf(quota, sizeof quota, "%lld", INT("quota_gpus"));
        snprintf(weight, sizeof weight, "%lld", INT("weight"));
        snprintf(used, sizeof used, "%lld", INT("running_gpus"));
        snprintf(borrowed, sizeof borrowed, "%lld", INT("borrowed_gpus"));
        snprintf(pending, sizeof pending, "%lld", INT("pending_jobs"));
#undef INT
        snprintf(recent, sizeof recent, "%.2f",
                 json_number_value(json_object_get(p, "usage_gpu_hours")));
        const char *cells[] = {json_string_value(json_object_get(p, "name")), quota, weight, used,
                               borrowed, pending, recent};
        if (cli_table_add(t, cells) != 0)
            rc = 1;
    }
    if (!rc && cli_table_rows(t) == 0)
        printf("no projects configured (tide.yaml `projects:`): every job counts as within quota\n");
    else if (!rc)
        rc = cli_table_print(t, stdout);
    cli_table_destroy(t);
    return rc;
}

int cli_usage_main(int argc, char **argv)
{
    static const struct cli_list_command cmd = {"usage", usage_usage, "/v1/projects", print_usage};
    return cli_list_command_run(&cmd, argc, argv);
}
