/*
 * What one submit request (POST /v1/jobs, POST /v1/jobs:batch) may create,
 * checked on the parsed body before any job is built or the lock taken:
 * the server holds every array member's spec text in memory, and the lock
 * while it inserts them, so a small body of many large arrays could
 * otherwise take the server's memory and stop its scheduling. tide submit
 * --file cuts its requests by the same measure.
 */
#ifndef TIDE_CORE_SUBMIT_LIMITS_H
#define TIDE_CORE_SUBMIT_LIMITS_H

#include <jansson.h>

#include "common/tide_err.h"

/* The largest request body a server reads (413 past it). */
#define SUBMIT_MAX_BODY_BYTES (1024 * 1024)
/* Jobs one request may create, array members counted. */
#define SUBMIT_MAX_JOBS 100000
/* Spec bytes one request may create: each spec's size (as compact JSON)
 * times its array. */
#define SUBMIT_MAX_SPEC_BYTES (64LL * 1024 * 1024)

/* What a request's specs add up to. Start it zeroed. */
struct submit_size {
    long long jobs;
    long long spec_bytes;
};

/* Adds one spec object as given: its array (1 when it has none, or one
 * its own check refuses) and its size times that. */
void submit_size_add(struct submit_size *size, json_t *given);

/* 0, or TIDE_EINVAL with err naming field (the spec's "array", the
 * batch's "jobs") when size is over either limit. */
int submit_size_check(const struct submit_size *size, const char *field, struct tide_err *err);

#endif
