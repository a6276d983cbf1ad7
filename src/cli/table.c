/* Aligned text tables (see table.h). */
#include "cli/table.h"

#include <stdlib.h>
#include <string.h>

#include "cli/printable.h"
#include "common/tide_err.h"

struct cli_table {
    size_t ncols;
    size_t nrows; /* header included */
    size_t cap;
    char **cells; /* nrows * ncols */
};

struct cli_table *cli_table_create(size_t ncols, const char *const *headers)
{
    struct cli_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ncols = ncols;
    if (cli_table_add(t, headers) != 0) {
        cli_table_destroy(t);
        return NULL;
    }
    return t;
}

void cli_table_destroy(struct cli_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

int cli_table_add(struct cli_table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **grown = realloc(t->cells, cap * t->ncols * sizeof *grown);
        if (!grown)
            return TIDE_ENOMEM;
        t->cells = grown;
        t->cap = cap;
    }
    char **row = t->cells + t->nrows * t->ncols;
    for (size_t c = 0; c < t->ncols; c++) {
        row[c] = cli_printable_dup(cells[c] ? cells[c] : "-"); /* cells are the server's words */
        if (!row[c]) {
            while (c > 0)
                free(row[--c]);
            return TIDE_ENOMEM;
        }
    }
    t->nrows++;
    return 0;
}

size_t cli_table_rows(const struct cli_table *t)
{
    return t->nrows - 1;
}

/* Characters in a UTF-8 string: bytes that do not continue a sequence. */
static size_t text_width(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

int cli_table_print(const struct cli_table *t, FILE *out)
{
    size_t *width = calloc(t->ncols, sizeof *width);
    if (!width)
        return 1;
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t w = text_width(t->cells[r * t->ncols + c]);
            if (w > width[c])
                width[c] = w;
        }
    int failed = 0;
    for (size_t r = 0; r < t->nrows && !failed; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * t->ncols + c];
            if (fputs(cell, out) == EOF)
                failed = 1;
            if (c + 1 == t->ncols)
                break;
            for (size_t pad = text_width(cell); pad < width[c] + 2; pad++)
                if (fputc(' ', out) == EOF)
                    failed = 1;
        }
        if (fputc('\n', out) == EOF)
            failed = 1;
    }
    free(width);
    if (fflush(out) != 0)
        failed = 1;
    return failed;
}
