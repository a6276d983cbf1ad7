/* `tide pools`: elastic pools with their nodes by state, price and cost so far. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/report.h"
#include "cli/list_command.h"
#include "cli/roles.h"
#include "cli/table.h"

static const char pools_usage[] =
    "usage: tide pools [--json] [--server URL] [--token T]\n"
    "\n"
    "Lists elastic pools: node shape, provider and billing, nodes ready/booting/\n"
    "draining against min-max, jobs waiting for the pool, the price per node-hour,\n"
    "the cost so far and the part of it no task used (idle).\n";

static int nodes_in(json_t *pool, const char *state)
{
    return (int)json_integer_value(json_object_get(json_object_get(pool, "nodes"), state));
}

static int print_pools(json_t *root)
{
    static const char *const headers[] = {"NAME", "NODE",    "PROVIDER", "BILLING", "READY",
                                          "BOOT", "DRAIN",   "MIN-MAX",  "WAITING", "PRICE/H",
                                          "COST", "IDLE-COST"};
    struct cli_table *t = cli_table_create(12, headers);
    if (!t)
        return 1;
    int rc = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(root, "pools"), i, p)
    {
        char shape[96], ready[16], boot[16], drain[16], range[32], waiting[16];
        snprintf(shape, sizeof shape, "%lldx%s",
                 (long long)json_integer_value(json_object_get(p, "gpus_per_node")),
                 cli_json_text(json_object_get(p, "gpu"), "?"));
        snprintf(ready, sizeof ready, "%d", nodes_in(p, "ready"));
        snprintf(boot, sizeof boot, "%d", nodes_in(p, "provisioning"));
        snprintf(drain, sizeof drain, "%d", nodes_in(p, "draining"));
        snprintf(range, sizeof range, "%lld-%lld",
                 (long long)json_integer_value(json_object_get(p, "min_nodes")),
                 (long long)json_integer_value(json_object_get(p, "max_nodes")));
        snprintf(waiting, sizeof waiting, "%lld",
                 (long long)json_integer_value(json_object_get(p, "pending_jobs")));
        char price[40], cost[40], idle[40];
        snprintf(price, sizeof price, "%.2f",
                 (double)json_integer_value(json_object_get(p, "price_per_node_hour_micros")) / 1e6);
        snprintf(cost, sizeof cost, "%.4f",
                 (double)json_integer_value(json_object_get(p, "cost_micros")) / 1e6);
        snprintf(idle, sizeof idle, "%.4f",
                 (double)json_integer_value(json_object_get(p, "idle_cost_micros")) / 1e6);
        const char *cells[] = {cli_json_text(json_object_get(p, "name"), NULL),
                               shape,
                               cli_json_text(json_object_get(p, "provider"), NULL),
                               cli_json_text(json_object_get(p, "billing"), NULL),
                               ready, boot, drain, range, waiting, price, cost, idle};
        if (cli_table_add(t, cells) != 0)
            rc = 1;
    }
    if (rc == 0 && cli_table_rows(t) == 0)
        printf("no elastic pools (configure them under pools: in tide.yaml)\n");
    else if (rc == 0)
        rc = cli_table_print(t, stdout);
    cli_table_destroy(t);
    return rc;
}

int cli_pools_main(int argc, char **argv)
{
    static const struct cli_list_command cmd = {"pools", pools_usage, "/v1/pools", print_pools};
    return cli_list_command_run(&cmd, argc, argv);
}
