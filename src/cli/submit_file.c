/* Batch submission from a JSON-lines file (submit_file.h). */
#include "cli/submit_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/fmt.h"
#include "cli/submit_spec.h"
#include "core/submit_limits.h"

struct pending {
    json_t *specs; /* the chunk being sent */
    int *lines;    /* each spec's line number */
    size_t n;      /* specs in it */
};

static int grow_ids(long long **ids, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 1024;
    while (n < need)
        n *= 2;
    long long *grown = realloc(*ids, n * sizeof *grown);
    if (!grown)
        return -1;
    *ids = grown;
    *cap = n;
    return 0;
}

/* Sends the chunk; records ids and per-line errors. Returns 0 or a
 * negative code with err. */
static int send_chunk(struct cli_client *c, const char *path, struct pending *p, long long **ids,
                      size_t *nids, size_t *cap, json_t *answers, int *refused,
                      struct tide_err *err)
{
    json_t *body = json_pack("{s:O}", "jobs", p->specs);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    json_t *out = NULL;
    char key[CLI_IDEMPOTENCY_KEY_SIZE]; /* a retry on another server must not submit twice */
    cli_idempotency_key_new(key);
    int rc = cli_client_request_json_keyed(c, "POST", "/v1/jobs:batch", text, key, &out, err);
    free(text);
    if (rc < 0)
        return rc;
    json_t *results = json_object_get(out, "jobs");
    if (json_array_size(results) != p->n) {
        json_decref(out);
        return tide_err_set(err, TIDE_EIO, NULL, "the server answered %zu results for %zu jobs",
                            json_array_size(results), p->n);
    }
    for (size_t i = 0; i < p->n; i++) {
        json_t *r = json_array_get(results, i);
        json_array_append(answers, r);
        json_t *e = json_object_get(r, "error");
        if (e) {
            const char *field = cli_json_text(json_object_get(e, "field"), NULL);
            fprintf(stderr, "tide submit: %s:%d: %s%s%s%s\n", path, p->lines[i],
                    cli_json_text(json_object_get(e, "message"), "refused"),
                    field ? " (field " : "", field ? field : "", field ? ")" : "");
            (*refused)++;
            continue;
        }
        json_t *all = json_object_get(r, "ids");
        size_t k = all ? json_array_size(all) : 1;
        if (grow_ids(ids, cap, *nids + k) < 0) {
            json_decref(out);
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        }
        for (size_t j = 0; j < k; j++)
            (*ids)[(*nids)++] = (long long)cli_json_number(
                all ? json_array_get(all, j) : json_object_get(r, "id"), 0);
    }
    json_decref(out);
    json_array_clear(p->specs);
    p->n = 0;
    return 0;
}

/* A spec no request can carry (over the server's body or its submit
 * limits even alone) is refused with its line before anything is sent:
 * found while sending, the requests before it were already submitted. */
static int fits_a_request_alone(json_t *spec, const char *path, int line_no, struct tide_err *err)
{
    struct submit_size size = {0};
    submit_size_add(&size, spec);
    struct tide_err why;
    if (submit_size_check(&size, "array", &why) != 0) {
        tide_err_set(err, TIDE_EINVAL, "file", "%s:%d: %s", path, line_no, why.message);
        return 2;
    }
    size_t body = json_dumpb(spec, NULL, 0, JSON_COMPACT) + sizeof "{\"jobs\":[]}" - 1;
    if (body > SUBMIT_MAX_BODY_BYTES) {
        tide_err_set(err, TIDE_EINVAL, "file",
                     "%s:%d: the spec is %zu bytes as JSON; a request carries at most %d", path,
                     line_no, body, SUBMIT_MAX_BODY_BYTES);
        return 2;
    }
    return 0;
}

int cli_submit_file_read(FILE *f, const char *path, json_t *overrides,
                         void (*set_workdir)(json_t *spec), json_t *specs, int **lines,
                         struct tide_err *err)
{
    size_t cap = 0;
    int line_no = 0;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    int rc = 0;
    while (!rc && (len = getline(&line, &line_cap, f)) >= 0) {
        line_no++;
        size_t start = strspn(line, " \t\r\n");
        if (start == (size_t)len || line[start] == '#')
            continue; /* blank lines and comments (a NUL byte is neither) */
        json_error_t jerr;
        json_t *spec = json_loadb(line, (size_t)len, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(spec)) {
            json_decref(spec);
            tide_err_set(err, TIDE_EINVAL, "file", "%s:%d: not a JSON object%s%s", path, line_no,
                         jerr.text[0] ? ": " : "", jerr.text);
            rc = 2;
            break;
        }
        size_t n = json_array_size(specs);
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            int *grown = realloc(*lines, cap * sizeof *grown);
            if (!grown) {
                json_decref(spec);
                rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
                break;
            }
            *lines = grown;
        }
        (*lines)[n] = line_no;
        if (cli_spec_merge(spec, overrides, err) < 0) {
            json_decref(spec);
            rc = TIDE_ENOMEM;
            break;
        }
        set_workdir(spec);
        rc = fits_a_request_alone(spec, path, line_no, err);
        if (rc) {
            json_decref(spec);
            break;
        }
        json_array_append_new(specs, spec);
    }
    if (!rc && ferror(f))
        rc = tide_err_set(err, TIDE_EIO, "file", "%s: %s", path, strerror(errno));
    if (!rc && json_array_size(specs) == 0) {
        tide_err_set(err, TIDE_EINVAL, "file", "%s: no job in it", path);
        rc = 2;
    }
    free(line);
    return rc;
}

size_t cli_submit_file_chunk_end(json_t *specs, size_t first, size_t max_body)
{
    size_t next = first, total = json_array_size(specs);
    size_t body = sizeof "{\"jobs\":[]}" - 1; /* the body as send_chunk writes it */
    struct submit_size size = {0};
    while (next < total && next - first < SUBMIT_FILE_CHUNK) {
        /* the server counts array members and their specs' bytes, and
         * takes a body of 1 MiB: a spec that would take a request past any
         * of them starts the next */
        struct submit_size with = size;
        submit_size_add(&with, json_array_get(specs, next));
        size_t with_body =
            body + json_dumpb(json_array_get(specs, next), NULL, 0, JSON_COMPACT) + (next > first);
        if (next > first && (with.jobs > SUBMIT_MAX_JOBS ||
                             with.spec_bytes > SUBMIT_MAX_SPEC_BYTES || with_body > max_body))
            break;
        size = with;
        body = with_body;
        next++;
    }
    return next;
}

int cli_submit_file(struct cli_client *c, const char *path, json_t *overrides,
                    void (*set_workdir)(json_t *spec), long long **ids, size_t *nids,
                    json_t **answers, struct tide_err *err)
{
    *ids = NULL;
    *nids = 0;
    *answers = json_array();
    json_t *all = json_array();
    int *lines = NULL;
    if (!*answers || !all) {
        json_decref(all);
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    }
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        json_decref(all);
        tide_err_set(err, TIDE_EINVAL, "file", "%s: %s", path, strerror(errno));
        return 2;
    }
    int rc = cli_submit_file_read(f, path, overrides, set_workdir, all, &lines, err);
    if (f != stdin)
        fclose(f);
    struct pending p = {.specs = json_array()};
    size_t cap = 0, next = 0, total = json_array_size(all);
    int refused = 0;
    if (!rc && !p.specs)
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    while (!rc && next < total) {
        size_t first = next;
        next = cli_submit_file_chunk_end(all, first, SUBMIT_FILE_MAX_BODY);
        for (size_t i = first; i < next; i++)
            json_array_append(p.specs, json_array_get(all, i));
        p.lines = lines + first;
        p.n = next - first;
        rc = send_chunk(c, path, &p, ids, nids, &cap, *answers, &refused, err);
    }
    free(lines);
    json_decref(p.specs);
    json_decref(all);
    if (!rc && refused)
        rc = 1;
    return rc;
}
