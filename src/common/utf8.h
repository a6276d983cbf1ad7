/*
 * Cutting text to a buffer without cutting a character in two: a name or
 * a message cut inside a UTF-8 sequence is not text any more, and JSON
 * (jansson refuses to encode it) and Prometheus (which drops the whole
 * scrape) both reject it.
 */
#ifndef TIDE_UTF8_H
#define TIDE_UTF8_H

#include <stddef.h>

/* Copies src into dst (size bytes, NUL-terminated), cut on a character
 * boundary when it does not fit. */
void utf8_copy(char *dst, size_t size, const char *src);

/* Drops an incomplete character at the end of s (what snprintf leaves
 * when it cuts inside one). */
void utf8_trim_tail(char *s);

#endif
