/* Failed-authentication limits per address (see auth_limit.h). */
#include "server/auth_limit.h"

#include <netinet/in.h>
#include <string.h>

void auth_limit_init(struct auth_limit *l)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
}

void auth_limit_release(struct auth_limit *l)
{
    pthread_mutex_destroy(&l->mu);
}

/* An address as a non-zero number (IPv4, or the low half of IPv6). */
static uint64_t address_key(const struct sockaddr *addr)
{
    uint64_t key = 0;
    if (addr && addr->sa_family == AF_INET)
        key = ((const struct sockaddr_in *)(const void *)addr)->sin_addr.s_addr;
    else if (addr && addr->sa_family == AF_INET6)
        memcpy(&key, &((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr.s6_addr[8],
               sizeof key);
    return key | 1ULL << 63;
}

static size_t slot_of(uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 40) % AUTH_LIMIT_SLOTS;
}

int64_t auth_limit_wait_ms(struct auth_limit *l, const struct sockaddr *addr, int64_t now_ms)
{
    uint64_t key = address_key(addr);
    size_t i = slot_of(key);
    int64_t wait = 0;
    pthread_mutex_lock(&l->mu);
    if (l->slots[i].address == key && l->slots[i].failures >= AUTH_LIMIT_FAILURES) {
        int64_t end = l->slots[i].window_start_ms + AUTH_LIMIT_WINDOW_MS;
        wait = end > now_ms ? end - now_ms : 0;
    }
    pthread_mutex_unlock(&l->mu);
    return wait;
}

void auth_limit_failed(struct auth_limit *l, const struct sockaddr *addr, int64_t now_ms)
{
    uint64_t key = address_key(addr);
    size_t i = slot_of(key);
    pthread_mutex_lock(&l->mu);
    if (l->slots[i].address != key || now_ms - l->slots[i].window_start_ms >= AUTH_LIMIT_WINDOW_MS) {
        l->slots[i].address = key;
        l->slots[i].window_start_ms = now_ms;
        l->slots[i].failures = 0;
    }
    l->slots[i].failures++;
    pthread_mutex_unlock(&l->mu);
}
