/*
 * SHA-256 through nettle (sha256.h): the project keeps no hash code of its
 * own. The hex form is the one tokens have always been stored under, so
 * databases made before the switch keep working.
 */
#include "common/sha256.h"

#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <string.h>

void sha256_hex(const void *data, size_t len, char out[65])
{
    struct sha256_ctx ctx;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, len, data);
    sha256_digest(&ctx, sizeof digest, digest);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof digest; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[64] = '\0';
}

bool ct_str_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    /* the lengths are no secret (hashes are 64 characters); the bytes are */
    if (la != lb)
        return false;
    return nettle_memeql_sec(a, b, la) != 0;
}
