/* UTF-8-safe cutting (utf8.h). */
#include "common/utf8.h"

#include <stdlib.h>
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

/* Length of the well-formed character at s, or 0 when it is not one. */
static size_t valid_length(const unsigned char *s)
{
    size_t need = sequence_length(s[0]);
    if (need <= 1)
        return need;
    /* the second byte's range excludes overlong forms, surrogates and
     * code points past U+10FFFF */
    unsigned char lo = 0x80, hi = 0xbf;
    if (need == 2 && s[0] < 0xc2)
        return 0;
    if (s[0] == 0xe0)
        lo = 0xa0;
    else if (s[0] == 0xed)
        hi = 0x9f;
    else if (s[0] == 0xf0)
        lo = 0x90;
    else if (s[0] == 0xf4)
        hi = 0x8f;
    else if (s[0] > 0xf4)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return need;
}

void utf8_scrub(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = valid_length(p);
        if (n) {
            p += n;
        } else {
            *p++ = '?';
        }
    }
}

json_t *utf8_json_string(const char *s)
{
    json_t *v = json_string(s);
    if (v || !s)
        return v;
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    utf8_scrub(copy);
    v = json_string(copy);
    free(copy);
    return v;
}
