/* Server text made safe for a terminal (printable.h). */
#include "cli/printable.h"

#include <stdlib.h>
#include <string.h>

/* Writes the escaped form of s into out (NULL: only counts); its length. */
static size_t escape(const char *s, char *out)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        char esc[8] = "";
        size_t used = 1;
        if (*p < 0x20 || *p == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", *p);
        else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) { /* C1 as UTF-8 */
            snprintf(esc, sizeof esc, "\\u%04x", p[1]);
            used = 2;
        }
        size_t len = esc[0] ? strlen(esc) : used;
        if (out)
            memcpy(out + n, esc[0] ? esc : (const char *)p, len);
        n += len;
        p += used;
    }
    return n;
}

char *cli_printable_dup(const char *s)
{
    size_t n = escape(s, NULL);
    char *out = malloc(n + 1);
    if (out) {
        escape(s, out);
        out[n] = '\0';
    }
    return out;
}

void cli_put_printable(const char *s, FILE *out)
{
    char *safe = cli_printable_dup(s);
    fputs(safe ? safe : "?", out);
    free(safe);
}
