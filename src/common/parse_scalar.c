/* A tide.yaml scalar as an integer or a boolean (see parse_scalar.h). */
#include "common/parse_scalar.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int parse_scalar_int(const char *s, long long *out)
{
    const char *digits = s[0] == '-' ? s + 1 : s;
    if (!*digits || strspn(digits, "0123456789") != strlen(digits))
        return -EINVAL;
    errno = 0;
    long long n = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return -ERANGE;
    *out = n;
    return 0;
}

int parse_scalar_bool(const char *s, bool *out)
{
    if (strcmp(s, "true") && strcmp(s, "false"))
        return -EINVAL;
    *out = s[0] == 't';
    return 0;
}
