/* `tide queues`: each queue's rules and what it runs and holds now. */
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/report.h"
#include "cli/list_command.h"
#include "cli/roles.h"
#include "cli/table.h"

static const char queues_usage[] =
    "usage: tide queues [--json] [--server URL] [--token T]\n"
    "\n"
    "Lists queues: priority range and default, caps on running jobs and GPUs,\n"
    "max wait before escalation, runtime limits, whether jobs are preemptible,\n"
    "idle reclaim, and the jobs running and pending in each now.\n";

static void cap_text(char *buf, size_t size, long long used, long long cap)
{
    if (cap > 0)
        snprintf(buf, size, "%lld/%lld", used, cap);
    else
        snprintf(buf, size, "%lld", used);
}

static int print_queues(json_t *root)
{
    json_t *queues = json_object_get(root, "queues");
    static const char *const headers[] = {"NAME", "PRIORITY", "RANGE", "JOBS", "GPUS",
                                          "PENDING", "MAX-WAIT", "MAX-RUNTIME", "PREEMPTIBLE",
                                          "IDLE-RECLAIM"};
    struct cli_table *t = cli_table_create(10, headers);
    if (!t)
        return 1;
    size_t i;
    json_t *q;
    int rc = 0;
    json_array_foreach(queues, i, q)
    {
        char name[80], prio[16], range[32], jobs[32], gpus[32], pending[16], wait[24], runtime[24],
            idle[32];
#define INT(key) (long long)json_integer_value(json_object_get(q, key))
        snprintf(name, sizeof name, "%s%s", json_string_value(json_object_get(q, "name")),
                 json_is_true(json_object_get(q, "default")) ? " (default)" : "");
        snprintf(prio, sizeof prio, "%lld", INT("priority"));
        snprintf(range, sizeof range, "%lld..%lld", INT("priority_min"), INT("priority_max"));
        cap_text(jobs, sizeof jobs, INT("running_jobs"), INT("max_running_jobs"));
        cap_text(gpus, sizeof gpus, INT("running_gpus"), INT("max_running_gpus"));
        snprintf(pending, sizeof pending, "%lld", INT("pending_jobs"));
        if (INT("max_wait_s"))
            snprintf(wait, sizeof wait, "%llds", INT("max_wait_s"));
        else
            snprintf(wait, sizeof wait, "-");
        if (INT("max_runtime_s"))
            snprintf(runtime, sizeof runtime, "%llds", INT("max_runtime_s"));
        else
            snprintf(runtime, sizeof runtime, "-");
        if (INT("idle_after_s"))
            snprintf(idle, sizeof idle, "<%lld%% for %llds", INT("idle_util_pct"), INT("idle_after_s"));
        else
            snprintf(idle, sizeof idle, "-");
#undef INT
        const char *cells[] = {name, prio,    range,
                               jobs, gpus,    pending,
                               wait, runtime, json_is_true(json_object_get(q, "preemptible")) ? "yes" : "no",
                               idle};
        if (cli_table_add(t, cells) != 0)
            rc = 1;
    }
    if (!rc)
        rc = cli_table_print(t, stdout);
    cli_table_destroy(t);
    return rc;
}

int cli_queues_main(int argc, char **argv)
{
    static const struct cli_list_command cmd = {"queues", queues_usage, "/v1/queues", print_queues};
    return cli_list_command_run(&cmd, argc, argv);
}
