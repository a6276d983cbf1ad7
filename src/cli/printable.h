/*
 * Text from the server as a terminal may show it. Job names are checked,
 * but commands, hold reasons and event messages are other users' words
 * and may hold control characters that a terminal acts on (move the
 * cursor, erase lines, set the title, write the clipboard). Those are
 * written as \xNN (C0 and DEL) or \uNNNN (C1), everything else as is.
 * --json output is JSON-escaped anyway and stays untouched; `tide logs`
 * prints a job's own output raw, as its owner wrote it.
 */
#ifndef TIDE_CLI_PRINTABLE_H
#define TIDE_CLI_PRINTABLE_H

#include <stdio.h>

/* Writes s to out with its control characters escaped. */
void cli_put_printable(const char *s, FILE *out);

/* s with its control characters escaped, malloc'ed; NULL when out of memory. */
char *cli_printable_dup(const char *s);

#endif
