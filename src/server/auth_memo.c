/* A connection's last bearer token and its hash (see auth_memo.h). */
#include "server/auth_memo.h"

#include <stdbool.h>
#include <string.h>

#include "common/sha256.h"

/* Whether a and b (len bytes each) are equal, in a time that does not
 * depend on where they differ: behind a proxy that shares its upstream
 * connections, the kept token may be another client's. */
static bool same_bytes(const char *a, const char *b, size_t len)
{
    unsigned char diff = 0;
    for (size_t i = 0; i < len; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

void auth_memo_hash(struct auth_memo *memo, const char *token, size_t len, char out[65])
{
    if (memo && len && memo->len == len && same_bytes(memo->token, token, len)) {
        memcpy(out, memo->hash, 65);
        return;
    }
    sha256_hex(token, len, out);
    if (!memo)
        return;
    if (len == 0 || len > AUTH_MEMO_TOKEN_MAX) {
        memo->len = 0;
        return;
    }
    memcpy(memo->token, token, len);
    memcpy(memo->hash, out, 65);
    memo->len = len;
}

size_t auth_hash_slot(const char *hash, size_t n)
{
    size_t v = 0;
    for (int i = 0; i < 8 && hash[i]; i++)
        v = v * 31 + (unsigned char)hash[i];
    return v % n;
}
