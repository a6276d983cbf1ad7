/* GET /v1/jobs page by page (jobs_fetch.h). */
#include "cli/jobs_fetch.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"

int cli_jobs_fetch(struct cli_client *c, const struct cli_jobs_filter *f, long long want,
                   json_t **out, struct tide_err *err)
{
    json_t *all = json_array(), *next = json_null();
    char cursor[32] = "", page[24];
    int rc = 0;
    while (want < 0 || (long long)json_array_size(all) < want) {
        long long left = want < 0 ? CLI_JOBS_PAGE : want - (long long)json_array_size(all);
        snprintf(page, sizeof page, "%lld", left < CLI_JOBS_PAGE ? left : CLI_JOBS_PAGE);
        const char *query[] = {"state",   f->state,   "queue",  f->queue,
                               "project", f->project, "order",  f->order,
                               "limit",   page,       "cursor", cursor[0] ? cursor : NULL,
                               NULL};
        char *path = cli_path_with_query("/v1/jobs", query);
        json_t *root = NULL;
        if (!path) {
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        } else if (cli_client_request_json(c, "GET", path, NULL, &root, err) < 0) {
            rc = -1;
        } else if (!json_is_array(json_object_get(root, "jobs"))) {
            rc = tide_err_set(err, TIDE_EIO, NULL, "the server's answer has no \"jobs\" list");
        } else {
            json_array_extend(all, json_object_get(root, "jobs"));
            json_decref(next);
            next = json_incref(json_object_get(root, "next"));
            if (!next)
                next = json_null(); /* a server from before paging: one page is all */
        }
        free(path);
        json_decref(root);
        if (rc || !json_is_string(next))
            break;
        snprintf(cursor, sizeof cursor, "%.31s", json_string_value(next));
    }
    if (rc) {
        json_decref(all);
        json_decref(next);
        return -1;
    }
    *out = json_pack("{s:o, s:o}", "jobs", all, "next", next);
    return *out ? 0 : tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
}
