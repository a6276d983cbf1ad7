/* Doubling growth for the core's arrays (array.h). */
#include "core/array.h"

#include <stdlib.h>

#include "core/core_banned.h"

int array_reserve(void **items, size_t *cap, size_t need, size_t item_size)
{
    if (need <= *cap)
        return 0;
    size_t next = *cap ? *cap * 2 : 16;
    while (next < need)
        next *= 2;
    void *grown = realloc(*items, next * item_size);
    if (!grown)
        return -1;
    *items = grown;
    *cap = next;
    return 0;
}
