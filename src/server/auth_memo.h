/*
 * A connection's last bearer token and its SHA-256: a keep-alive client
 * sends the same token with every request, and hashing it (to look it up
 * by hash, auth_cache.h) was a tenth of a submit's own CPU. The kept
 * token is compared in constant time: a proxy may send several clients'
 * requests over one connection. Owned by one connection's thread; no lock.
 */
#ifndef TIDE_SERVER_AUTH_MEMO_H
#define TIDE_SERVER_AUTH_MEMO_H

#include <stddef.h>

/* Longest token kept (auth.c refuses longer ones anyway). */
#define AUTH_MEMO_TOKEN_MAX 256

struct auth_memo {
    size_t len; /* 0: nothing kept */
    char token[AUTH_MEMO_TOKEN_MAX];
    char hash[65];
};

/* Writes the SHA-256 hex of token[0..len) to out, reusing memo's when it
 * holds the same token and keeping this one otherwise. memo may be NULL
 * (no connection to keep it on): then it only hashes. */
void auth_memo_hash(struct auth_memo *memo, const char *token, size_t len, char out[65]);

/* A token hash's place in a table of n slots (auth_cache.h, auth_known.h):
 * its first hex digits, as good as any hash of it. */
size_t auth_hash_slot(const char *hash, size_t n);

#endif
