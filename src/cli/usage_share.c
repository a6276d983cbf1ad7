/* The fair-share view of `tide usage --share`: each project's GPU quota,
 * what it uses and borrows, and its decayed use that fair share orders
 * borrowers by. */
#include "cli/usage_share.h"

#include <stdio.h>

#include "cli/table.h"

int cli_usage_share_print(json_t *root)
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
