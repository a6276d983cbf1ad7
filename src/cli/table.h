/*
 * Aligned text tables for the human output of `tide jobs`, `tide nodes`...:
 * collect rows, then print them with each column as wide as its widest cell
 * (counted in characters, not bytes). Cells are copied; the last column is
 * not padded, so long reasons do not leave trailing blanks.
 */
#ifndef TIDE_CLI_TABLE_H
#define TIDE_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

struct cli_table;

/* A new table with ncols columns titled headers (copied); NULL when out of
 * memory. Free with cli_table_destroy. */
struct cli_table *cli_table_create(size_t ncols, const char *const *headers);

/* Accepts NULL. */
void cli_table_destroy(struct cli_table *t);

/* Appends a row of ncols cells (copied; a NULL cell prints as "-").
 * Returns 0 or TIDE_ENOMEM. */
int cli_table_add(struct cli_table *t, const char *const *cells);

/* Rows added so far, the header not counted. */
size_t cli_table_rows(const struct cli_table *t);

/* Prints the header and rows. Returns 0, or 1 when out could not be written. */
int cli_table_print(const struct cli_table *t, FILE *out);

#endif
