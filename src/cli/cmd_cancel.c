/* `tide cancel IDS... [--project P] [--state S]`: DELETE each job named by
 * id, range or list, or chosen by the filters (GET /v1/jobs, filtered by
 * the server); goes on past failures, ends with how many were cancelled
 * and exits 1 if any cancel failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/id_list.h"
#include "cli/jobs_fetch.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "cli/wait.h"

static const char cancel_usage[] =
    "usage: tide cancel [IDS...] [--project P] [--state S] [--json] [--server URL] [--token T]\n"
    "\n"
    "Cancels jobs. A pending job is cancelled at once; a running one is stopped\n"
    "by its agent (SIGTERM, then SIGKILL after the grace period).\n"
    "\n"
    "  IDS            job ids: 45, a range 45-47 (both included), or a comma\n"
    "                 list of either, 45,50-52; several arguments add up\n"
    "  --project P    the jobs of project P that have not finished\n"
    "  --state S      the jobs in state S (pending, starting, running, ...)\n"
    "With --project or --state the server lists the matching jobs and each is\n"
    "cancelled; given ids as well, only those of them that match. Prints one\n"
    "line a job and, for more than one, how many were cancelled. Exits 1 if\n"
    "any could not be (not found, already finished).\n"
    "\n"
    "examples: tide cancel 45-47   tide cancel --project vision --state pending\n";

enum { OPT_PROJECT = 1, OPT_STATE };

static const struct cli_opt cancel_opts[] = {
    {"--project", CLI_OPT_VALUE, OPT_PROJECT},
    {"--state", CLI_OPT_VALUE, OPT_STATE},
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};

/* Cancels one job. Returns 1 when it is cancelled (or stopping), 0 when
 * not (the error printed). */
static int cancel_one(struct cli_client *c, long long id)
{
    struct tide_err err = {0};
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", id);
    if (c->json) {
        if (cli_request_and_print(c, "DELETE", path, NULL, &err) < 0) {
            cli_fail("cancel", &err);
            return 0;
        }
        return 1;
    }
    json_t *job;
    if (cli_client_request_json(c, "DELETE", path, NULL, &job, &err) < 0) {
        cli_fail("cancel", &err);
        return 0;
    }
    const char *state = cli_json_text(json_object_get(job, "state"), "?");
    if (!strcmp(state, "cancelled"))
        printf("cancelled job %lld\n", id);
    else
        printf("stopping job %lld (%s%s%s)\n", id, state,
               json_is_string(json_object_get(job, "node")) ? " on " : "",
               cli_json_text(json_object_get(job, "node"), ""));
    json_decref(job);
    return 1;
}

static const char *const known_states[] = {"pending", "starting",  "running", "preempted",
                                           "lost",    "succeeded", "failed",  "cancelled",
                                           "timeout", NULL};

static int check_state(const char *state, struct tide_err *err)
{
    if (cli_state_is_final(state))
        return tide_err_set(err, TIDE_EINVAL, NULL,
                            "--state: jobs in state %s have finished; there is nothing to cancel",
                            state);
    for (int i = 0; known_states[i]; i++)
        if (!strcmp(state, known_states[i]))
            return 0;
    return tide_err_set(err, TIDE_EINVAL, NULL,
                        "--state: unknown state '%s' (pending, starting, running, preempted, "
                        "lost)",
                        state);
}

/* The ids of the jobs that match the filters (and are in given, when it
 * has any) and have not finished, into out. */
static int select_jobs(struct cli_client *c, const char *project, const char *state,
                       const struct cli_id_list *given, struct cli_id_list *out,
                       struct tide_err *err)
{
    struct cli_jobs_filter f = {.state = state, .project = project};
    json_t *root;
    int rc = cli_jobs_fetch(c, &f, -1, &root, err);
    if (rc < 0)
        return rc;
    size_t i;
    json_t *job;
    json_array_foreach(json_object_get(root, "jobs"), i, job)
    {
        long long id = (long long)cli_json_number(json_object_get(job, "id"), 0);
        const char *s = cli_json_text(json_object_get(job, "state"), "");
        if (id <= 0 || cli_state_is_final(s) || (given->n && !cli_id_list_has(given, id)))
            continue;
        if ((rc = cli_id_list_add(out, id, err)) < 0)
            break;
    }
    json_decref(root);
    return rc;
}

int cli_cancel_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    struct cli_id_list given, chosen;
    const char *v, *project = NULL, *state = NULL;
    int id, r, rc = 2;
    cli_id_list_init(&given);
    cli_id_list_init(&chosen);
    cli_args_init(&a, argc, argv);
    for (;;) {
        r = cli_args_next(&a, cancel_opts, &id, &v, &err);
        if (r == CLI_ARGS_END && a.next < argc) {
            v = argv[a.next++]; /* ids after "--" */
            r = CLI_ARGS_POSITIONAL;
        }
        if (r == CLI_ARGS_END)
            break;
        if (r < 0)
            goto usage;
        if (r == CLI_ARGS_OPTION) {
            if (id == OPT_PROJECT)
                project = v;
            else if (id == OPT_STATE)
                state = v;
            else
                cli_common_apply(&co, id, v);
            continue;
        }
        if (cli_id_list_parse(&given, v, &err) < 0)
            goto usage;
    }
    if (co.help) {
        fputs(cancel_usage, stdout);
        rc = 0;
        goto out;
    }
    if (state && check_state(state, &err) < 0)
        goto usage;
    if (project && !*project) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "--project: empty project name");
        goto usage;
    }
    if (given.n == 0 && !project && !state) {
        tide_err_set(&err, TIDE_EINVAL, NULL,
                     "which jobs? give ids (45, 45-47, 45,50) or --project/--state");
        goto usage;
    }
    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0) {
        rc = cli_fail("cancel", &err);
        goto out;
    }
    const struct cli_id_list *ids = &given;
    if (project || state) {
        if (select_jobs(&c, project, state, &given, &chosen, &err) < 0) {
            rc = cli_fail("cancel", &err);
            cli_client_release(&c);
            goto out;
        }
        ids = &chosen;
    }
    size_t done = 0;
    for (size_t i = 0; i < ids->n; i++)
        done += (size_t)cancel_one(&c, ids->ids[i]);
    cli_client_release(&c);
    rc = done == ids->n ? 0 : 1;
    if (!co.json && ids->n == 0)
        printf("no unfinished job matches\n");
    else if (!co.json && (ids->n != 1 || project || state))
        printf("cancelled %zu of %zu job%s\n", done, ids->n, ids->n == 1 ? "" : "s");
    if (fflush(stdout) != 0)
        rc = 1;
    goto out;
usage:
    rc = cli_usage_fail("cancel", &err);
out:
    cli_id_list_release(&given);
    cli_id_list_release(&chosen);
    return rc;
}
