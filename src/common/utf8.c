/* UTF-8-safe cutting (utf8.h). */
#include "common/utf8.h"

#include <string.h>

/* How many bytes the character led by byte c takes; 0 for a byte that
 * continues one (or is not UTF-8). */
static size_t sequence_length(unsigned char c)
{
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0)
        return 2;
    if ((c & 0xf0) == 0xe0)
        return 3;
    if ((c & 0xf8) == 0xf0)
        return 4;
    return 0;
}

void utf8_trim_tail(char *s)
{
    size_t len = strlen(s);
    /* the last lead byte, at most 3 back */
    for (size_t back = 1; back <= 4 && back <= len; back++) {
        size_t need = sequence_length((unsigned char)s[len - back]);
        if (need == 0)
            continue; /* a continuation byte: look further back */
        if (need > back)
            s[len - back] = '\0'; /* it was cut short */
        return;
    }
}

void utf8_copy(char *dst, size_t size, const char *src)
{
    if (!size)
        return;
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    utf8_trim_tail(dst);
}
