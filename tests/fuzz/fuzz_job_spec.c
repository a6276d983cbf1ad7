/*
 * Fuzz target: a submitted job spec, JSON bytes as POST /v1/jobs gets them
 * (core/job_spec.c). Accepted specs must come back as a canonical object
 * that parses again to the same job.
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
        return 0;
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
