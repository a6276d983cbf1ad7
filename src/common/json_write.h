/*
 * Compact JSON text of a jansson value, the same bytes as
 * json_dumps(v, JSON_COMPACT) writes, written straight into one growing
 * buffer. jansson's dump calls a callback per token, checks every string's
 * UTF-8 one code point at a time and keeps a table of the containers it is
 * in; for a job's reply (some forty values) that was ~10 us, the largest
 * single cost of a POST /v1/jobs answer. This writer is ~10x cheaper.
 */
#ifndef TIDE_COMMON_JSON_WRITE_H
#define TIDE_COMMON_JSON_WRITE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Containers nested deeper than this are refused (as a cycle would be). */
#define JSON_WRITE_MAX_DEPTH 2048

/* The compact text of v (an object, array or any other value), followed by
 * '\n' when newline. Returns a new NUL-terminated string the caller frees,
 * its length (without the NUL) in *len (len may be NULL). NULL when out
 * of memory, when v holds what json_dumps also refuses (a string that is
 * not UTF-8, a real that is not finite), or containers nested over
 * JSON_WRITE_MAX_DEPTH deep (where json_dumps would look for a cycle). */
char *json_write_compact(const json_t *v, bool newline, size_t *len);

#endif
