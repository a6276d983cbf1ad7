/* Polling jobs until they finish (see wait.h). */
#include "cli/wait.h"

#include <stdio.h>
#include <string.h>

#include "cli/fmt.h"
#include "cli/printable.h"
#include "common/fsutil.h"

#define CLI_WAIT_POLL_MS 1000

int cli_state_is_final(const char *state)
{
    static const char *const done[] = {"succeeded", "failed", "cancelled", "timeout", NULL};
    for (int i = 0; done[i]; i++)
        if (!strcmp(state, done[i]))
            return 1;
    return 0;
}

static void report_change(long long id, json_t *job)
{
    const char *state = cli_json_text(json_object_get(job, "state"), "?");
    const char *reason = cli_json_text(json_object_get(job, "pending_reason"), NULL);
    if (!reason)
        reason = cli_json_text(json_object_get(job, "reason"), NULL);
    /* a reason may be another user's words (a hold, a requeue): escaped */
    fprintf(stderr, "job %lld: ", id);
    cli_put_printable(state, stderr);
    if (reason && *reason) {
        fputs(" (", stderr);
        cli_put_printable(reason, stderr);
        fputc(')', stderr);
    }
    fputc('\n', stderr);
}

int cli_wait_jobs(struct cli_client *c, const long long *ids, size_t n, json_t **final,
                  struct tide_err *err)
{
    *final = json_array();
    if (!*final)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (json_array_append_new(*final, json_null()) != 0) {
            json_decref(*final);
            *final = NULL;
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        }
    size_t open = n;
    while (open > 0) {
        open = 0;
        for (size_t i = 0; i < n; i++) {
            json_t *last = json_array_get(*final, i);
            const char *was = cli_json_text(json_object_get(last, "state"), "");
            if (cli_state_is_final(was))
                continue;
            char path[64];
            snprintf(path, sizeof path, "/v1/jobs/%lld", ids[i]);
            json_t *job;
            int rc = cli_client_request_json(c, "GET", path, NULL, &job, err);
            if (rc < 0) {
                json_decref(*final);
                *final = NULL;
                return rc;
            }
            const char *state = cli_json_text(json_object_get(job, "state"), "?");
            if (strcmp(state, was) != 0)
                report_change(ids[i], job);
            if (!cli_state_is_final(state))
                open++;
            json_array_set_new(*final, i, job);
        }
        if (open > 0)
            clock_sleep_ms(CLI_WAIT_POLL_MS, NULL);
    }
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *job = json_array_get(*final, i);
        if (strcmp(cli_json_text(json_object_get(job, "state"), ""), "succeeded") != 0)
            failed++;
    }
    return failed;
}

int cli_job_exit_status(json_t *job)
{
    const char *state = cli_json_text(json_object_get(job, "state"), "");
    json_t *code = json_object_get(job, "exit_code"), *sig = json_object_get(job, "signal");
    if (!strcmp(state, "succeeded"))
        return 0;
    if (!strcmp(state, "timeout"))
        return CLI_EXIT_TIMEOUT;
    if (!strcmp(state, "cancelled"))
        return CLI_EXIT_CANCELLED;
    if (json_is_integer(code) && json_integer_value(code) > 0 && json_integer_value(code) < 256)
        return (int)json_integer_value(code);
    if (json_is_integer(sig) && json_integer_value(sig) > 0 && json_integer_value(sig) < 128)
        return 128 + (int)json_integer_value(sig);
    return CLI_EXIT_NO_CODE;
}
