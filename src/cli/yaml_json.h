/*
 * YAML to JSON for `tide submit job.yaml`: one YAML document becomes one
 * jansson value. Mappings become objects, sequences arrays; plain scalars
 * that read as null, bool, int or float (YAML 1.2 core schema) become those
 * JSON types, every other scalar (quoted, block, `!!str`) a string.
 */
#ifndef TIDE_CLI_YAML_JSON_H
#define TIDE_CLI_YAML_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "common/tide_err.h"

/* Converts the YAML text (len bytes, need not be NUL-terminated) into a new
 * jansson value stored in *out, which the caller releases with json_decref.
 * name (a file name, or NULL for "<input>") prefixes error messages, which
 * read "job.yaml:3:5: problem". Fails with TIDE_EINVAL on a syntax error,
 * a duplicate mapping key (err->field names the key), a non-scalar key, an
 * empty stream or more than one document, a number JSON cannot hold, or
 * nesting or alias expansion beyond fixed bounds; TIDE_ENOMEM when memory
 * runs out. On failure *out is NULL. */
int cli_yaml_to_json(const char *text, size_t len, const char *name, json_t **out,
                     struct tide_err *err);

/* The same, but the plain scalars anywhere under the top-level keys named
 * in text_keys (NULL-terminated) stay strings, spelled as written: argv and
 * environment values are text, and `0.1`, `0x1F` or an empty value read as
 * numbers or null came back respelled ("0.10000000000000001", "31", "null"). */
int cli_yaml_to_json_keeping_text(const char *text, size_t len, const char *name,
                                  const char *const *text_keys, json_t **out, struct tide_err *err);

/* As cli_yaml_to_json, for tide.yaml (`tide sim --config`): plain scalars
 * become integers and booleans only as the server's reader takes them
 * (common/parse_scalar.h). 0x1F, 0o17, +5, True and FALSE stay strings,
 * which an integer or boolean key then refuses as the server does, rather
 * than the simulator running a file the server would not start with. */
int cli_yaml_config_to_json(const char *text, size_t len, const char *name, json_t **out,
                            struct tide_err *err);

#endif
