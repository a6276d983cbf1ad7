/*
 * Forgetting what is old (the server's retention settings): finished jobs
 * with their events, and events, past their time. Deletes go in bounded
 * batches so the server's lock is never held for long.
 */
#ifndef TIDE_STORE_RETENTION_H
#define TIDE_STORE_RETENTION_H

#include <stddef.h>
#include <stdint.h>

#include "common/tide_err.h"

struct store;

/* Deletes up to max jobs that ended before before_ms, and their events, in
 * one transaction; their ids go to ids (room for max), their count to *n. */
int store_retention_drop_jobs(struct store *s, int64_t before_ms, size_t max, int64_t *ids,
                              size_t *n, struct tide_err *err);

/* Deletes up to max events older than before_ms; their count to *n. */
int store_retention_drop_events(struct store *s, int64_t before_ms, size_t max, size_t *n,
                                struct tide_err *err);

#endif
