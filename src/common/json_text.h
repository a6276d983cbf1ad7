/*
 * A JSON value as compact text, the same text json_dumps(v, JSON_COMPACT)
 * writes, in one growing buffer: about a fifth of jansson's cost, which
 * checks each container for loops through a hash table keyed by a printed
 * pointer. For the hot paths that dump a spec per job (a batch submit).
 */
#ifndef TIDE_JSON_TEXT_H
#define TIDE_JSON_TEXT_H

#include <jansson.h>

/* v as compact JSON text (malloc'd), or NULL when out of memory, when v
 * is NULL, or when it nests deeper than 64 levels. */
char *json_text_compact(const json_t *v);

#endif
