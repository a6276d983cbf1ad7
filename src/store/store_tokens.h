/*
 * The life of API tokens beyond issuing them: an expiry time, listing
 * (never the secret: only its hash is stored), revoking by name, and
 * rotating the admin and shared join tokens out.
 */
#ifndef TIDE_STORE_TOKENS_H
#define TIDE_STORE_TOKENS_H

#include <jansson.h>
#include <stdint.h>

#include "common/tide_err.h"
#include "store/store.h"

/* Sets when the token with this hash stops working (0: never). */
int store_token_set_expiry(struct store *s, const char *hash, int64_t expires_ms,
                           struct tide_err *err);

/* The user, metrics and node-bound join tokens as a new array of {name,
 * kind, projects, created, expires}; a join token's name is its node's and
 * it also has "used" (true once it registered the node). */
int store_tokens_list(struct store *s, json_t **out, struct tide_err *err);

/* Uses up the node-bound join token with this hash (TOKEN_JOIN_BOUND
 * becomes TOKEN_JOIN_USED), inside the caller's transaction so that a
 * registration that fails leaves it usable. TIDE_EAUTH when it is not an
 * unused bound join token (already used: a second registration lost). */
int store_token_use_join(struct store *s, const char *hash, struct tide_err *err);

/* Deletes every user, metrics or node-bound join token named name; *count
 * says how many. */
int store_tokens_revoke(struct store *s, const char *name, int *count, struct tide_err *err);

/* Marks every token of kind (TOKEN_ADMIN or TOKEN_JOIN) TOKEN_ROTATED, in
 * the caller's transaction; *count says how many. */
int store_tokens_rotate(struct store *s, enum token_kind kind, int *count, struct tide_err *err);

#endif
