/*
 * What an exec provider's program prints on stdout, {"nodes": [{"id",
 * "name", "state"}]} (docs/providers.md), read into provider_nodes. Kept
 * apart from running the program (provider_exec.c) so that the reading of
 * output no one at tide wrote can be tested and fuzzed on its own.
 */
#ifndef TIDE_PROVIDER_ANSWER_H
#define TIDE_PROVIDER_ANSWER_H

#include <jansson.h>

#include "providers/provider.h"

/* The "nodes" array of text (a new reference), or NULL with err saying
 * that prog's stdout is not an answer. */
json_t *provider_answer_nodes(const char *prog, const char *text, struct tide_err *err);

/* Reads the answer text (may be NULL: nothing printed) of `prog create
 * pool count`, which ran with result run_rc (0, or a negative code with err
 * already set: a failed create may still name what it made), into the ids
 * of nodes[0..count): by name, by position for an entry without one. An id
 * of PROVIDER_ID_MAX bytes or more is never cut, nor one with a control
 * character taken: either fails the create.
 * Returns run_rc, or a negative code with err when the answer is unusable. */
int provider_answer_create(const char *prog, const char *pool, const char *text, int run_rc,
                           struct provider_node *nodes, int count, struct tide_err *err);

/* Reads the answer text of `prog list pool` into nodes (at most max; name,
 * id, interrupted). Entries with neither id nor name, an id of
 * PROVIDER_ID_MAX bytes or more, a name of TIDE_NAME_MAX bytes or more, or
 * either with a control character are left out (said in the log, never
 * with what they hold), as is everything past max. Returns how many, or TIDE_EIO with err. */
int provider_answer_list(const char *prog, const char *pool, const char *text,
                         struct provider_node *nodes, int max, struct tide_err *err);

#endif
