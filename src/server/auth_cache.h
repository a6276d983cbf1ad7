/*
 * The admin and user tokens the server has looked up lately, by the
 * SHA-256 of their value, so that a request is authenticated without the
 * server's lock or a query (a submit storm would otherwise queue behind a
 * scheduling pass just to read its token). Any change to the tokens
 * (issue, expiry, revoke) empties it through a generation count, so a
 * revoked token fails on the next request; an entry also lives at most
 * AUTH_CACHE_TTL_MS, the bound for changes made by another process
 * sharing the database. Join, node and metrics tokens are not kept.
 */
#ifndef TIDE_SERVER_AUTH_CACHE_H
#define TIDE_SERVER_AUTH_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

#define AUTH_CACHE_SLOTS 64
#define AUTH_CACHE_TTL_MS 1000

struct auth_cache {
    pthread_mutex_t mu;
    uint64_t generation; /* bumped by every change to the tokens */
    struct {
        char hash[65]; /* "": empty */
        struct token_info info;
        int64_t loaded_ms;
    } slots[AUTH_CACHE_SLOTS];
};

void auth_cache_init(struct auth_cache *c);
void auth_cache_release(struct auth_cache *c);

/* True with *out filled (its projects a new copy the caller releases with
 * token_info_release) when hash was looked up less than AUTH_CACHE_TTL_MS
 * ago and no token changed since. Otherwise false, and *generation is what
 * to hand auth_cache_put after looking the token up in the store. */
bool auth_cache_get(struct auth_cache *c, const char *hash, int64_t now_ms,
                    struct token_info *out, uint64_t *generation);

/* Keeps a copy of info for hash, unless a token changed since the
 * auth_cache_get that returned generation (the lookup may be stale) or
 * the token is not an admin or user token. */
void auth_cache_put(struct auth_cache *c, const char *hash, const struct token_info *info,
                    uint64_t generation, int64_t now_ms);

/* Forgets every entry: call after any change to the stored tokens. */
void auth_cache_invalidate(struct auth_cache *c);

#endif
