/*
 * Job id lists as `tide cancel` takes them: one id ("45"), a range
 * ("45-47", both ends included) or a comma list of either ("45,50-52").
 * The list is kept sorted with no repeats, so "45-47 46" names three jobs,
 * cancelled in id order.
 */
#ifndef TIDE_CLI_ID_LIST_H
#define TIDE_CLI_ID_LIST_H

#include <stddef.h>

#include "common/tide_err.h"

/* At most this many ids in one list (all arguments together). */
#define CLI_ID_LIST_MAX 100000

struct cli_id_list {
    long long *ids; /* ascending, no repeats */
    size_t n, cap;
};

void cli_id_list_init(struct cli_id_list *l);
void cli_id_list_release(struct cli_id_list *l);

/* True when id is in l. */
int cli_id_list_has(const struct cli_id_list *l, long long id);

/* Adds id unless l has it. Returns 0, TIDE_ENOMEM, or TIDE_EINVAL when
 * l would pass CLI_ID_LIST_MAX. */
int cli_id_list_add(struct cli_id_list *l, long long id, struct tide_err *err);

/* Parses s ("45", "45-47", "45,50-52") and adds its ids to l. Returns 0,
 * or TIDE_EINVAL with err naming the bad part: not a positive id, a range
 * whose end is below its start, an empty item, or too many ids. */
int cli_id_list_parse(struct cli_id_list *l, const char *s, struct tide_err *err);

#endif
