/*
 * SHA-256 (from nettle, a maintained crypto library), used to store API
 * tokens hashed so a copy of the database does not hand out working
 * credentials, and a constant-time comparison for secrets and their hashes.
 */
#ifndef TIDE_SHA256_H
#define TIDE_SHA256_H

#include <stdbool.h>
#include <stddef.h>

/* Writes the digest of data as 64 lowercase hex characters plus NUL. */
void sha256_hex(const void *data, size_t len, char out[65]);

/* Whether strings a and b are equal, in time that depends only on their
 * lengths, never on where they first differ. */
bool ct_str_equal(const char *a, const char *b);

#endif
