/* Recently seen admin and user tokens (see auth_cache.h). */
#include "server/auth_cache.h"

#include <stdio.h>
#include <string.h>

#include "server/auth_memo.h"

void auth_cache_init(struct auth_cache *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
}

static void slot_clear(struct auth_cache *c, size_t i)
{
    token_info_release(&c->slots[i].info);
    memset(&c->slots[i], 0, sizeof c->slots[i]);
}

void auth_cache_release(struct auth_cache *c)
{
    for (size_t i = 0; i < AUTH_CACHE_SLOTS; i++)
        slot_clear(c, i);
    pthread_mutex_destroy(&c->mu);
}

static size_t slot_of(const char *hash)
{
    return auth_hash_slot(hash, AUTH_CACHE_SLOTS);
}

/* A copy of in whose projects out owns; false (out untouched) when out of
 * memory: a missing project list would mean every project. */
static bool info_copy(const struct token_info *in, struct token_info *out)
{
    json_t *projects = NULL;
    if (in->projects && !(projects = json_deep_copy(in->projects)))
        return false;
    *out = *in;
    out->projects = projects;
    return true;
}

bool auth_cache_get(struct auth_cache *c, const char *hash, int64_t now_ms,
                    struct token_info *out, uint64_t *generation)
{
    size_t i = slot_of(hash);
    bool hit = false;
    pthread_mutex_lock(&c->mu);
    *generation = c->generation;
    if (c->slots[i].hash[0] && !strcmp(c->slots[i].hash, hash)) {
        if (now_ms - c->slots[i].loaded_ms < AUTH_CACHE_TTL_MS && now_ms >= c->slots[i].loaded_ms)
            hit = info_copy(&c->slots[i].info, out);
        else
            slot_clear(c, i);
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

void auth_cache_put(struct auth_cache *c, const char *hash, const struct token_info *info,
                    uint64_t generation, int64_t now_ms)
{
    if (info->kind != TOKEN_ADMIN && info->kind != TOKEN_USER)
        return;
    size_t i = slot_of(hash);
    pthread_mutex_lock(&c->mu);
    if (generation == c->generation) {
        struct token_info copy;
        if (info_copy(info, &copy)) {
            slot_clear(c, i);
            snprintf(c->slots[i].hash, sizeof c->slots[i].hash, "%s", hash);
            c->slots[i].info = copy;
            c->slots[i].loaded_ms = now_ms;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

void auth_cache_invalidate(struct auth_cache *c)
{
    pthread_mutex_lock(&c->mu);
    c->generation++;
    for (size_t i = 0; i < AUTH_CACHE_SLOTS; i++)
        slot_clear(c, i);
    pthread_mutex_unlock(&c->mu);
}
