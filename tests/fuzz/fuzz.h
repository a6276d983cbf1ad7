/*
 * What every fuzz harness in tests/fuzz/ shares: the libFuzzer entry point
 * each one defines, and a NUL-terminated copy of the input for parsers that
 * want a C string. The same harnesses link with libFuzzer (`make fuzz`) or
 * with replay_main.c, which runs them over the seed corpus under ctest.
 */
#ifndef TIDE_FUZZ_H
#define TIDE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A new NUL-terminated copy of data (the caller frees), or NULL. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
    }
    return s;
}

#endif
