/*
 * Building the job spec that `tide submit` sends: read from a YAML or JSON
 * file, and from flags that map 1:1 to spec fields (--gpu-memory is
 * gpu_memory). Flags override the file's fields; --env adds to the file's
 * env map key by key. Only the shape is checked here (numbers are numbers);
 * ranges and meaning are the server's job.
 */
#ifndef TIDE_CLI_SUBMIT_SPEC_H
#define TIDE_CLI_SUBMIT_SPEC_H

#include <jansson.h>
#include <stddef.h>

#include "cli/args.h"
#include "common/tide_err.h"

/* Number of spec flags; ids 1..count are theirs in cli_spec_flag_opts. */
size_t cli_spec_flag_count(void);

/* Fills opts[0 .. count-1] with the spec flags (ids 1..count). */
void cli_spec_flag_opts(struct cli_opt *opts);

/* Help lines for the spec flags, one a line, for `tide submit --help`. */
const char *cli_spec_flag_help(void);

/* The flag ("--gpu-memory") that sets field, or NULL when none does. */
const char *cli_spec_flag_for_field(const char *field);

/* Records flag id (1..count) with its value into overrides, an object of
 * fields: repeated --env K=V collect into an env object, repeated
 * --depends-on into an array. Returns 0, or TIDE_EINVAL naming the flag when
 * the value has the wrong shape (not a number, env without '='). */
int cli_spec_apply_flag(json_t *overrides, int id, const char *value, struct tide_err *err);

/* Reads a job spec from path ("-" reads stdin) into a new object *out. JSON
 * when the name ends in .json or the text starts with '{', else YAML.
 * Errors say file:line:column; a spec must be a mapping. */
int cli_spec_load(const char *path, json_t **out, struct tide_err *err);

/* Copies every field of overrides into spec, merging env maps key by key.
 * Returns 0 or TIDE_ENOMEM. */
int cli_spec_merge(json_t *spec, json_t *overrides, struct tide_err *err);

#endif
