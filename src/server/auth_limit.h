/*
 * Rate limit on failed authentications, per client address: after
 * AUTH_LIMIT_FAILURES refusals within AUTH_LIMIT_WINDOW_MS, an address gets
 * 429 without its tokens being looked at until the window ends, so guessing
 * tokens is slow and cheap to refuse. A fixed table: addresses that hash to
 * one slot share it (never a reason to refuse a good token for long).
 */
#ifndef TIDE_SERVER_AUTH_LIMIT_H
#define TIDE_SERVER_AUTH_LIMIT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#define AUTH_LIMIT_SLOTS 1024
#define AUTH_LIMIT_FAILURES 30
#define AUTH_LIMIT_WINDOW_MS 60000

struct auth_limit {
    pthread_mutex_t mu;
    struct {
        uint64_t address; /* 0: empty */
        int64_t window_start_ms;
        int failures;
    } slots[AUTH_LIMIT_SLOTS];
};

void auth_limit_init(struct auth_limit *l);
void auth_limit_release(struct auth_limit *l);

/* How long addr must still wait (ms), 0 when it may try. */
int64_t auth_limit_wait_ms(struct auth_limit *l, const struct sockaddr *addr, int64_t now_ms);

/* Counts a refused authentication from addr. */
void auth_limit_failed(struct auth_limit *l, const struct sockaddr *addr, int64_t now_ms);

#endif
