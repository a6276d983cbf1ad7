/*
 * SHA-256 (FIPS 180-4), used to store API tokens hashed so a copy of the
 * database does not hand out working credentials.
 */
#ifndef TIDE_SHA256_H
#define TIDE_SHA256_H

#include <stddef.h>

/* Writes the digest of data as 64 lowercase hex characters plus NUL. */
void sha256_hex(const void *data, size_t len, char out[65]);

#endif
