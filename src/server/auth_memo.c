/* A connection's last bearer token and its hash (see auth_memo.h). */
#include "server/auth_memo.h"

#include <string.h>

#include "common/sha256.h"

void auth_memo_hash(struct auth_memo *memo, const char *token, size_t len, char out[65])
{
    if (memo && len && memo->len == len && !memcmp(memo->token, token, len)) {
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
