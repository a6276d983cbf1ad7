/*
 * Parsing and validating a submitted job spec (DESIGN.md "Job spec").
 * Unknown fields, wrong types and out-of-range values are refused with the
 * field's name and the reason; what is accepted comes back as a canonical
 * spec (defaults filled in) for the store and a struct job for the core.
 */
#ifndef TIDE_JOB_SPEC_H
#define TIDE_JOB_SPEC_H

#include <jansson.h>
#include <stddef.h>

#include "common/tide_err.h"
#include "core/cluster.h"

#define JOB_SPEC_MAX_NAME 256
#define JOB_SPEC_MAX_PRIORITY 1000
#define JOB_SPEC_MAX_RUNTIME_S (366LL * 24 * 3600)
#define JOB_SPEC_MAX_RETRIES 100
#define JOB_SPEC_MAX_ARGS 4096
#define JOB_SPEC_MAX_ENV 1024
#define JOB_SPEC_MAX_ARRAY 10000
#define JOB_SPEC_MAX_IMAGE 255
#define JOB_SPEC_MAX_MOUNTS 64

/* Parses body (len bytes, need not be NUL-terminated). On success returns 0,
 * sets *spec_out to a new canonical spec object (caller json_decref's it) and
 * fills job's scheduling fields (id, state and times are left zero). On
 * failure returns TIDE_EINVAL with err naming the field. */
int job_spec_parse(const char *body, size_t len, json_t **spec_out, struct job *job,
                   struct tide_err *err);

/* Same, from an already parsed object (not consumed). */
int job_spec_from_object(json_t *obj, json_t **spec_out, struct job *job, struct tide_err *err);

/* Signal number for a checkpoint_signal name ("SIGTERM", "TERM", "15"), or -1. */
int job_spec_signal_number(const char *name);

/* The length of s (len bytes) cut to at most max bytes on a UTF-8
 * boundary, so that what is kept stays valid text. */
size_t job_spec_cut_utf8(const char *s, size_t len, size_t max);

#endif
