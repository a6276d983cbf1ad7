/*
 * Cutting text to a buffer without cutting a character in two: a name or
 * a message cut inside a UTF-8 sequence is not text any more, and JSON
 * (jansson refuses to encode it) and Prometheus (which drops the whole
 * scrape) both reject it.
 */
#ifndef TIDE_UTF8_H
#define TIDE_UTF8_H

#include <jansson.h>
#include <stddef.h>

/* Copies src into dst (size bytes, NUL-terminated), cut on a character
 * boundary when it does not fit. */
void utf8_copy(char *dst, size_t size, const char *src);

/* Drops an incomplete character at the end of s (what snprintf leaves
 * when it cuts inside one). */
void utf8_trim_tail(char *s);

/* Replaces, in place, each byte that does not belong to a well-formed
 * character (RFC 3629: no overlong forms, surrogates or code points past
 * U+10FFFF) with '?'. For text from outside (an agent, a query string, an
 * old row) that a reply must carry rather than fail on. */
void utf8_scrub(char *s);

/* json_string(s), or for text that is not UTF-8, of a scrubbed copy: a row
 * with a bad byte is shown, not dropped. NULL only when out of memory. */
json_t *utf8_json_string(const char *s);

#endif
