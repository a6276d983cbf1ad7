/* `tide`: dispatches to the subcommand named by argv[1]. */
#include <stdio.h>
#include <string.h>

#include "cli/roles.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"up", cli_up_main, "start a server and two local agents with fake GPUs under ./.tide/"},
    {"server", server_main, "run the scheduler and REST API"},
    {"agent", agent_main, "run a node agent that registers GPUs and runs tasks"},
    {"submit", cli_submit_main, "submit a job (flags -- CMD ARGS..., or a YAML/JSON file)"},
    {"jobs", cli_jobs_main, "list jobs"},
    {"show", cli_show_main, "show one job"},
    {"cancel", cli_cancel_main, "cancel a job"},
    {"logs", cli_logs_main, "print (or follow with -f) a job's output"},
    {"nodes", cli_nodes_main, "list nodes and their GPUs"},
    {"pools", cli_pools_main, "list elastic pools: nodes by state, cost so far"},
    {"token", cli_token_main, "create API tokens limited to projects"},
    {"queues", cli_queues_main, "list queues, their rules and what they run"},
    {"events", cli_events_main, "what happened to jobs, nodes and pools (--job ID: a job's timeline)"},
    {"usage", cli_usage_main, "GPU-hours and cost by project, pool, queue, day (--share: quotas)"},
    {"hold", cli_hold_main, "keep pending jobs from starting (with a reason)"},
    {"release", cli_release_main, "let held jobs start again"},
    {"requeue", cli_requeue_main, "stop running jobs and put them back in the queue (no retry used)"},
    {"top", cli_top_main, "a live view: queue, running jobs, nodes and GPU use (--once)"},
    {"sim", cli_sim_main, "replay a job trace through the scheduler on a virtual clock"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: tide COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nRun 'tide COMMAND --help' for a command's options. Every client command\n"
                 "also takes --ca FILE (or TIDE_CA): the CA an https server is verified with.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(argv[1], subcommands[i].name))
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tide: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
