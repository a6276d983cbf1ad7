/*
 * Idempotency keys of submissions: what a client's `Idempotency-Key` was
 * used for, so a retry after a lost answer gets the jobs it already made
 * instead of new copies. Rows are written in the submission's transaction,
 * so a key is remembered exactly when its jobs are durable.
 */
#ifndef TIDE_STORE_IDEMPOTENCY_H
#define TIDE_STORE_IDEMPOTENCY_H

#include <jansson.h>
#include <stdint.h>

#include "common/tide_err.h"

struct store;

/* How long a key is remembered: a retry comes within seconds; a day covers
 * a client that was down for a while. */
#define IDEMPOTENCY_KEEP_MS (24LL * 3600 * 1000)

/* What (owner, key) made since now_ms - IDEMPOTENCY_KEEP_MS: 0 with
 * *job_ids (a new array the caller frees) and request_hash (65 bytes)
 * filled, TIDE_ENOENT when unknown or expired, or TIDE_EIO. */
int store_idempotency_get(struct store *s, const char *owner, const char *key, int64_t now_ms,
                          char request_hash[65], json_t **job_ids, struct tide_err *err);

/* Records (owner, key) as having made job_ids from the request with this
 * hash, replacing an expired entry; drops entries past their time. */
int store_idempotency_put(struct store *s, const char *owner, const char *key,
                          const char *request_hash, const int64_t *job_ids, int count,
                          int64_t now_ms, struct tide_err *err);

#endif
