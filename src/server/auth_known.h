/*
 * The tokens this server has seen pass authentication, by the SHA-256 of
 * their value, so that the failed-authentication limit (auth_limit.h)
 * holds back only guesses: while an address is limited, a known token is
 * still checked as usual and an unknown one gets 429 unread. An agent's
 * node token, or the admin's, sent from the same address (host, NAT,
 * proxy) as someone guessing keeps working: refused heartbeats would
 * fence the agent's jobs. Unlike auth_cache.h it keeps every kind of
 * token and outlives token changes: it only lets a token be checked,
 * never says what the token is, and one whose check fails is forgotten.
 * A fixed table: buckets of AUTH_KNOWN_WAYS, where a full one forgets its
 * least recently seen token.
 */
#ifndef TIDE_SERVER_AUTH_KNOWN_H
#define TIDE_SERVER_AUTH_KNOWN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define AUTH_KNOWN_BUCKETS 1024
#define AUTH_KNOWN_WAYS 4

struct auth_known {
    pthread_mutex_t mu;
    struct {
        char hash[65]; /* "": empty */
        int64_t seen_ms;
    } slots[AUTH_KNOWN_BUCKETS][AUTH_KNOWN_WAYS];
};

void auth_known_init(struct auth_known *k);
void auth_known_release(struct auth_known *k);

/* Notes that the token of hash (hex SHA-256) passed its check at now_ms. */
void auth_known_add(struct auth_known *k, const char *hash, int64_t now_ms);

/* Whether the token of hash passed a check and has failed none since. */
bool auth_known_has(struct auth_known *k, const char *hash);

/* Forgets hash: its token failed a check (revoked, expired, used up). */
void auth_known_forget(struct auth_known *k, const char *hash);

#endif
