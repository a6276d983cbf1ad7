/*
 * POST /v1/jobs:batch: many job specs in one request and one transaction.
 * Each spec is checked alone (a bad one gets its own error and does not
 * stop the others); the good ones go to the group committer together, and
 * the answer, one entry per spec in order, is sent after they are durable.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "server/server.h"
#include "server/submit_batch.h"
#include "core/submit_limits.h"

/* The most specs in one request (the 1 MiB body limit usually comes first). */
#define BATCH_MAX_JOBS 10000

/* One refused spec's entry: {"status": 400, "error": {...}} (new reference). */
static json_t *error_entry(const struct tide_err *err)
{
    struct api_reply tmp;
    memset(&tmp, 0, sizeof tmp);
    api_error(&tmp, err);
    if (tmp.json)
        json_object_set_new(tmp.json, "status", json_integer(tmp.status));
    return tmp.json;
}

/* Per-spec keys: KEY/INDEX, each with the hash of its own spec, so a
 * retried batch replays job by job (docs/api.md). */
static int set_key(struct submit_work *w, const char *key, size_t index, json_t *given, char **owned)
{
    char *text = json_dumps(given, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text || asprintf(owned, "%s/%zu", key, index) < 0) {
        free(text);
        *owned = NULL;
        return -1;
    }
    sha256_hex(text, strlen(text), w->request_hash);
    free(text);
    w->idempotency_key = *owned;
    return 0;
}

int api_jobs_submit_batch(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    if (req->token.kind != TOKEN_ADMIN && req->token.kind != TOKEN_USER)
        return api_error_msg(reply, TIDE_EPERM, NULL, "this token cannot submit jobs");
    const char *key = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Idempotency-Key");
    if (key && !api_idempotency_key_valid(key))
        return api_error_msg(reply, TIDE_EINVAL, "Idempotency-Key",
                             "Idempotency-Key: must be 1 to %d printable ASCII characters",
                             IDEMPOTENCY_KEY_MAX);
    json_error_t jerr;
    json_t *body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!body)
        return api_error_msg(reply, TIDE_EINVAL, NULL, "invalid JSON at line %d column %d: %s",
                             jerr.line, jerr.column, jerr.text);
    json_t *specs = json_object_get(body, "jobs");
    if (!json_is_object(body) || json_object_size(body) != 1 || !json_is_array(specs) ||
        json_array_size(specs) < 1 || json_array_size(specs) > BATCH_MAX_JOBS) {
        json_decref(body);
        return api_error_msg(reply, TIDE_EINVAL, "jobs",
                             "jobs: the body must be {\"jobs\": [spec, ...]} with 1 to %d specs",
                             BATCH_MAX_JOBS);
    }
    size_t n = json_array_size(specs);
    struct submit_size size = {0, 0};
    for (size_t i = 0; i < n; i++)
        submit_size_add(&size, json_array_get(specs, i));
    struct tide_err too_big;
    if (submit_size_check(&size, "jobs", &too_big) != 0) {
        json_decref(body);
        return api_error(reply, &too_big);
    }
    struct submit_work *works = calloc(n, sizeof *works);
    struct submit_work **queued = calloc(n, sizeof *queued);
    json_t **entries = calloc(n, sizeof *entries);
    char **keys = calloc(n, sizeof *keys);
    json_t *results = json_array();
    if (!works || !queued || !entries || !keys || !results) {
        free(works), free(queued), free(entries), free(keys);
        json_decref(results);
        json_decref(body);
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    }
    size_t nqueued = 0;
    for (size_t i = 0; i < n; i++) {
        struct submit_work *w = &works[i];
        struct tide_err err;
        tide_err_clear(&err);
        json_t *given = json_array_get(specs, i);
        if (!json_is_object(given)) {
            tide_err_set(&err, TIDE_EINVAL, "jobs", "jobs[%zu]: must be a job spec object", i);
            entries[i] = error_entry(&err);
            continue;
        }
        if (api_jobs_check_spec(srv, req, given, &w->spec, &w->job, &err) != 0) {
            entries[i] = error_entry(&err);
            continue;
        }
        w->req = req;
        w->ids_only = true;
        if (key && set_key(w, key, i, given, &keys[i]) != 0) {
            tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
            entries[i] = error_entry(&err);
            json_decref(w->spec);
            w->spec = NULL;
            continue;
        }
        queued[nqueued++] = w;
    }
    submit_batch_run_many(srv, queued, nqueued);
    size_t created = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        struct submit_work *w = &works[i];
        if (w->spec) {
            if (w->rc) {
                json_decref(w->out);
                entries[i] = error_entry(&w->err);
            } else {
                entries[i] = w->out;
            }
            json_decref(w->spec);
        }
        if (entries[i] && json_object_get(entries[i], "error"))
            failed++;
        else
            created++;
        json_array_append_new(results, entries[i] ? entries[i] : json_null());
        free(keys[i]);
    }
    free(works), free(queued), free(entries), free(keys);
    json_decref(body);
    reply->status = 200;
    reply->json = json_pack("{s:o, s:I, s:I}", "jobs", results, "created", (json_int_t)created,
                            "failed", (json_int_t)failed);
    return 0;
}
