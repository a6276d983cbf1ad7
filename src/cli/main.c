/*
 * `tide`: dispatches to the subcommand named by argv[1]. The client
 * commands and the agent are linked in; server and up live in tide-roles.so
 * beside this executable and are loaded only when run (see roles_module.h).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/roles.h"
#include "cli/roles_module.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv); /* NULL: in tide-roles.so */
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"up", NULL, "start a server and two local agents with fake GPUs under ./.tide/"},
    {"server", NULL, "run the scheduler and REST API"},
    {"agent", agent_main, "run a node agent that registers GPUs and runs tasks"},
    {"submit", cli_submit_main, "submit a job (flags -- CMD ARGS..., or a YAML/JSON file)"},
    {"jobs", cli_jobs_main, "list jobs"},
    {"show", cli_show_main, "show one job"},
    {"cancel", cli_cancel_main, "cancel a job"},
    {"logs", cli_logs_main, "print (or follow with -f) a job's output"},
    {"nodes", cli_nodes_main, "list nodes and their GPUs"},
    {"pools", cli_pools_main, "list elastic pools: nodes by state, cost so far"},
    {"token", cli_token_main, "create, list and revoke API tokens; rotate the admin or join token"},
    {"queues", cli_queues_main, "list queues, their rules and what they run"},
    {"events", cli_events_main,
     "what happened to jobs, nodes and pools (--job ID: a job's timeline)"},
    {"usage", cli_usage_main, "GPU-hours and cost by project, pool, queue, day (--share: quotas)"},
    {"hold", cli_hold_main, "keep pending jobs from starting (with a reason)"},
    {"release", cli_release_main, "let held jobs start again"},
    {"requeue", cli_requeue_main,
     "stop running jobs and put them back in the queue (no retry used)"},
    {"top", cli_top_main, "a live view: queue, running jobs, nodes and GPU use (--once)"},
    {"sim", cli_sim_main, "replay a job trace through the scheduler on a virtual clock"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: tide COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nRun 'tide COMMAND --help' for a command's options. Every client command\n"
                 "also takes --ca FILE (or TIDE_CA): the CA an https server is verified with,\n"
                 "and --server URL[,URL...] (or TIDE_SERVER): servers tried in order, the\n"
                 "leader among them followed (docs/cli.md).\n");
}

/* Runs role name from tide-roles.so, found beside /proc/self/exe. */
static int run_from_module(const char *name, int argc, char **argv)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) {
        fprintf(stderr, "tide %s: cannot find this executable (/proc/self/exe)\n", name);
        return 1;
    }
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    if (dir + sizeof TIDE_ROLES_MODULE_FILE > sizeof path) {
        fprintf(stderr, "tide %s: the path of this executable is too long\n", name);
        return 1;
    }
    memcpy(path + dir, TIDE_ROLES_MODULE_FILE, sizeof TIDE_ROLES_MODULE_FILE);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const struct tide_role *roles = h ? dlsym(h, TIDE_ROLES_SYMBOL) : NULL;
    if (!roles) {
        fprintf(stderr, "tide %s: cannot load %s (it belongs beside the tide executable): %s\n",
                name, path, dlerror());
        return 1;
    }
    for (; roles->name; roles++)
        if (!strcmp(roles->name, name))
            return roles->run(argc, argv);
    fprintf(stderr, "tide %s: %s has no such role\n", name, path);
    return 1;
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
            return subcommands[i].run ? subcommands[i].run(argc - 1, argv + 1)
                                      : run_from_module(argv[1], argc - 1, argv + 1);
    fprintf(stderr, "tide: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
