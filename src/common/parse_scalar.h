/*
 * A tide.yaml scalar's text as an integer or a boolean: one rule for every
 * section, in the server's reader and in pool_spec (which tide sim shares).
 * An integer is decimal digits with an optional leading '-' (strtol alone
 * would also take " 12" and "+12"); a boolean is true or false.
 */
#ifndef TIDE_PARSE_SCALAR_H
#define TIDE_PARSE_SCALAR_H

#include <stdbool.h>

/* s as a decimal integer into *out. Returns 0; -EINVAL when s is anything
 * but digits after an optional '-'; -ERANGE when it does not fit a long
 * long (callers say which range they allow). *out is set only on success. */
int parse_scalar_int(const char *s, long long *out);

/* "true" or "false" into *out; -EINVAL for anything else (yes, no, True,
 * 1 included). */
int parse_scalar_bool(const char *s, bool *out);

#endif
