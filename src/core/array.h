/*
 * Growing arrays: the one doubling-realloc the core's lists (actions, pool
 * actions, nodes, jobs) share.
 */
#ifndef TIDE_ARRAY_H
#define TIDE_ARRAY_H

#include <stddef.h>

/* Makes room for at least `need` items of item_size bytes in *items (whose
 * capacity is *cap), doubling from 16. Returns 0, or -1 when out of memory
 * (then *items and *cap are unchanged). */
int array_reserve(void **items, size_t *cap, size_t need, size_t item_size);

#endif
