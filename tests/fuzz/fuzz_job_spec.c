/*
 * Fuzz target: a submitted job spec, JSON bytes as POST /v1/jobs gets them
 * (core/job_spec.c). Accepted specs must come back as a canonical object
 * that parses again to the same job, and an array's member (its spec as
 * stored: TIDE_ARRAY_INDEX added) must parse too, as the server reads it
 * back at every start. A refusal must be text a reply can carry.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/job_spec.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *spec = NULL;
    struct job job;
    struct tide_err err;
    memset(&job, 0, sizeof job);
    tide_err_clear(&err);
    if (job_spec_parse((const char *)data, size, &spec, &job, &err) != 0) {
        if (!err.message[0])
            abort(); /* every refusal says why */
        json_t *message = json_string(err.message), *field = json_string(err.field);
        if (!message || !field)
            abort(); /* not UTF-8: the 400 could not be written */
        json_decref(message);
        json_decref(field);
        return 0;
    }
    if (json_object_get(spec, "array")) {
        json_t *member = json_deep_copy(spec), *env = json_object_get(member, "env");
        if (!env)
            json_object_set_new(member, "env", env = json_object());
        json_object_set_new(env, "TIDE_ARRAY_INDEX", json_string("0"));
        json_object_del(member, "array");
        json_t *stored = NULL;
        struct job member_job;
        if (job_spec_from_object(member, &stored, &member_job, &err) != 0) {
            fprintf(stderr, "an array member's spec refused: %s: %s\n", err.field, err.message);
            abort();
        }
        json_decref(stored);
        json_decref(member);
    }
    /* The canonical form is itself a valid spec. */
    json_t *again = NULL;
    struct job job2;
    memset(&job2, 0, sizeof job2);
    if (job_spec_from_object(spec, &again, &job2, &err) != 0) {
        fprintf(stderr, "canonical spec refused: %s: %s\n", err.field, err.message);
        abort();
    }
    if (!json_equal(spec, again))
        abort();
    json_decref(again);
    json_decref(spec);
    return 0;
}
