/*
 * Fuzz target: a `tide submit --file` JSON-lines file (cli/submit_file.c),
 * the input as the file's contents, read and then cut into the requests it
 * would send. Every spec line must land in exactly one request, in order;
 * a request of more than one spec must be within what the server takes
 * (its body size, SUBMIT_FILE_CHUNK specs, submit_limits' jobs and spec
 * bytes). The cut is also made with a small body budget, which inputs of
 * fuzzing size reach, and held to it the same way.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/submit_file.h"
#include "core/submit_limits.h"
#include "fuzz.h"
#include "server/server.h"

#define SMALL_BODY 512

static void no_workdir(json_t *spec)
{
    (void)spec;
}

/* Lines that hold a spec: anything but blanks and '#' comments. */
static size_t spec_lines(const uint8_t *data, size_t size)
{
    size_t count = 0;
    for (size_t at = 0; at < size;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t end = nl ? (size_t)(nl - data) : size;
        size_t i = at;
        while (i < end && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r'))
            i++;
        if (i < end && data[i] != '#')
            count++;
        at = end + 1;
    }
    return count;
}

/* The bytes of the request body the specs [first, end) make. */
static size_t body_bytes(json_t *specs, size_t first, size_t end)
{
    json_t *chunk = json_array();
    for (size_t i = first; i < end; i++)
        json_array_append(chunk, json_array_get(specs, i));
    json_t *body = json_pack("{s:o}", "jobs", chunk);
    size_t n = json_dumpb(body, NULL, 0, JSON_COMPACT);
    json_decref(body);
    return n;
}

/* Cuts specs as cli_submit_file does with max_body; each request, but
 * one of a single spec (refused or not on its own), within limits. */
static void check_cuts(json_t *specs, size_t max_body)
{
    size_t total = json_array_size(specs), sent = 0;
    for (size_t first = 0; first < total;) {
        size_t end = cli_submit_file_chunk_end(specs, first, max_body);
        if (end <= first || end > total || end - first > SUBMIT_FILE_CHUNK)
            abort(); /* empty, past the end, or too many specs */
        struct submit_size size = {0};
        for (size_t i = first; i < end; i++)
            submit_size_add(&size, json_array_get(specs, i));
        if (end - first > 1 && (submit_size_check(&size, "jobs", NULL) != 0 ||
                                body_bytes(specs, first, end) > max_body))
            abort();
        sent += end - first;
        first = end;
    }
    if (sent != total)
        abort();
}

_Static_assert(SUBMIT_FILE_MAX_BODY <= SERVER_MAX_BODY_BYTES, "a request the server refuses");

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    json_t *specs = json_array();
    int *lines = NULL;
    struct tide_err err;
    tide_err_clear(&err);
    int rc = cli_submit_file_read(f, "jobs.jsonl", NULL, no_workdir, specs, &lines, &err);
    fclose(f);
    if (rc != 0) {
        if (!err.message[0])
            abort(); /* a refusal says why */
    } else {
        size_t n = json_array_size(specs);
        if (n != spec_lines(data, size))
            abort(); /* a spec line lost, or one read twice */
        for (size_t i = 0; i < n; i++)
            if (!json_is_object(json_array_get(specs, i)) || lines[i] < 1 ||
                (i && lines[i] <= lines[i - 1]))
                abort();
        check_cuts(specs, SUBMIT_FILE_MAX_BODY);
        check_cuts(specs, SMALL_BODY); /* a budget the fuzzer's inputs can pass */
    }
    free(lines);
    json_decref(specs);
    return 0;
}
