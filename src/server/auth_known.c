/* Tokens seen passing authentication (see auth_known.h). */
#include "server/auth_known.h"

#include <stdio.h>
#include <string.h>

#include "server/auth_memo.h"

void auth_known_init(struct auth_known *k)
{
    memset(k, 0, sizeof *k);
    pthread_mutex_init(&k->mu, NULL);
}

void auth_known_release(struct auth_known *k)
{
    pthread_mutex_destroy(&k->mu);
}

static size_t bucket_of(const char *hash)
{
    return auth_hash_slot(hash, AUTH_KNOWN_BUCKETS);
}

/* hash's way in bucket b, or -1. Caller holds mu. */
static int way_of(const struct auth_known *k, size_t b, const char *hash)
{
    for (int w = 0; w < AUTH_KNOWN_WAYS; w++)
        if (k->slots[b][w].hash[0] && !strcmp(k->slots[b][w].hash, hash))
            return w;
    return -1;
}

void auth_known_add(struct auth_known *k, const char *hash, int64_t now_ms)
{
    size_t b = bucket_of(hash);
    pthread_mutex_lock(&k->mu);
    int w = way_of(k, b, hash);
    if (w < 0) { /* an empty way, else the least recently seen */
        w = 0;
        for (int i = 0; i < AUTH_KNOWN_WAYS; i++) {
            if (!k->slots[b][i].hash[0]) {
                w = i;
                break;
            }
            if (k->slots[b][i].seen_ms < k->slots[b][w].seen_ms)
                w = i;
        }
        snprintf(k->slots[b][w].hash, sizeof k->slots[b][w].hash, "%s", hash);
    }
    k->slots[b][w].seen_ms = now_ms;
    pthread_mutex_unlock(&k->mu);
}

bool auth_known_has(struct auth_known *k, const char *hash)
{
    size_t b = bucket_of(hash);
    pthread_mutex_lock(&k->mu);
    bool known = way_of(k, b, hash) >= 0;
    pthread_mutex_unlock(&k->mu);
    return known;
}

void auth_known_forget(struct auth_known *k, const char *hash)
{
    size_t b = bucket_of(hash);
    pthread_mutex_lock(&k->mu);
    int w = way_of(k, b, hash);
    if (w >= 0)
        memset(&k->slots[b][w], 0, sizeof k->slots[b][w]);
    pthread_mutex_unlock(&k->mu);
}
