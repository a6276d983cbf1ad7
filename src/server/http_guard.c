/*
 * Connection-flood guards of the HTTP front (http_guard.h). Connections per
 * address are counted in a fixed open-addressing table (linear probing,
 * backward-shift deletion) under one mutex: at most one entry per open
 * connection, so it never fills while the connection limit holds.
 */
#include "server/http_guard.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#define GUARD_SLOTS 16384 /* power of two, above HTTP_GUARD_CONNECTION_LIMIT */
#define GUARD_FD_RESERVE 256

struct guard_slot {
    uint8_t addr[16]; /* IPv4 as ::ffff:a.b.c.d */
    unsigned count;   /* 0: free */
};

static struct guard_slot slots[GUARD_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

unsigned http_guard_connection_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1000;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit raised = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            rl = raised;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= HTTP_GUARD_CONNECTION_LIMIT + GUARD_FD_RESERVE)
        return HTTP_GUARD_CONNECTION_LIMIT;
    return rl.rlim_cur > 2 * GUARD_FD_RESERVE ? (unsigned)(rl.rlim_cur - GUARD_FD_RESERVE)
                                              : (unsigned)(rl.rlim_cur / 2);
}

/* The address as 16 bytes; false for families other than IPv4 and IPv6. */
static bool addr_key(const struct sockaddr *addr, socklen_t len, uint8_t key[16])
{
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        memset(key, 0, 10);
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &in->sin_addr, 4);
        return true;
    }
    if (addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        memcpy(key, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
        return true;
    }
    return false;
}

static bool key_is_loopback(const uint8_t key[16])
{
    static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    /* 127.0.0.1 and ::1, what local agents and tools use; other 127/8
     * addresses count as any client (and let the tests play one). */
    return (!memcmp(key, v4_prefix, 12) && key[12] == 127 && key[13] == 0 && key[14] == 0 &&
            key[15] == 1) ||
           !memcmp(key, v6_loopback, 16);
}

bool http_guard_is_loopback(const struct sockaddr *addr, socklen_t len)
{
    uint8_t key[16];
    return addr_key(addr, len, key) && key_is_loopback(key);
}

static size_t key_hash(const uint8_t key[16])
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        h = (h ^ key[i]) * 1099511628211ULL;
    return (size_t)(h & (GUARD_SLOTS - 1));
}

/* The slot holding key, or the free slot where it would go; NULL when the
 * table is full. Under slots_lock. */
static struct guard_slot *find_slot(const uint8_t key[16])
{
    size_t i = key_hash(key);
    for (size_t n = 0; n < GUARD_SLOTS; n++, i = (i + 1) & (GUARD_SLOTS - 1))
        if (!slots[i].count || !memcmp(slots[i].addr, key, 16))
            return &slots[i];
    return NULL;
}

/* Frees slot s and moves later entries of its probe run back (no
 * tombstones). Under slots_lock. */
static void free_slot(struct guard_slot *s)
{
    size_t hole = (size_t)(s - slots), i = hole;
    s->count = 0;
    for (;;) {
        i = (i + 1) & (GUARD_SLOTS - 1);
        if (!slots[i].count)
            return;
        size_t home = key_hash(slots[i].addr);
        /* the entry may fill the hole unless its home lies in (hole, i] */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            slots[hole] = slots[i];
            slots[i].count = 0;
            hole = i;
        }
    }
}

enum MHD_Result http_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)cls;
    uint8_t key[16];
    if (!addr_key(addr, addrlen, key) || key_is_loopback(key))
        return MHD_YES;
    pthread_mutex_lock(&slots_lock);
    struct guard_slot *s = find_slot(key);
    bool ok = s && s->count < HTTP_GUARD_PER_IP_LIMIT;
    pthread_mutex_unlock(&slots_lock);
    return ok ? MHD_YES : MHD_NO;
}

void http_guard_count(const struct sockaddr *addr, socklen_t len, int delta)
{
    uint8_t key[16];
    if (!addr_key(addr, len, key) || key_is_loopback(key))
        return;
    pthread_mutex_lock(&slots_lock);
    struct guard_slot *s = find_slot(key);
    if (s && delta > 0) {
        if (!s->count)
            memcpy(s->addr, key, 16);
        s->count++;
    } else if (s && s->count) {
        if (--s->count == 0)
            free_slot(s);
    }
    pthread_mutex_unlock(&slots_lock);
}

unsigned http_guard_held(const struct sockaddr *addr, socklen_t len)
{
    uint8_t key[16];
    if (!addr_key(addr, len, key))
        return 0;
    pthread_mutex_lock(&slots_lock);
    struct guard_slot *s = find_slot(key);
    unsigned n = s ? s->count : 0;
    pthread_mutex_unlock(&slots_lock);
    return n;
}

static void count_connection(struct MHD_Connection *conn, int delta)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info)
        http_guard_count(info->client_addr, sizeof(struct sockaddr_in6), delta);
}

void http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    (void)socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        count_connection(conn, +1);
        MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                  (unsigned)HTTP_GUARD_HEADER_TIMEOUT_S);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        count_connection(conn, -1);
    }
}

void http_guard_headers_done(struct MHD_Connection *conn)
{
    MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                              (unsigned)HTTP_GUARD_IDLE_TIMEOUT_S);
}

void http_guard_request_done(struct MHD_Connection *conn)
{
    MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                              (unsigned)HTTP_GUARD_HEADER_TIMEOUT_S);
}
