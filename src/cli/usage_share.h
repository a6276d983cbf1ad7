/* The fair-share table of `tide usage --share` (GET /v1/projects). */
#ifndef TIDE_CLI_USAGE_SHARE_H
#define TIDE_CLI_USAGE_SHARE_H

#include <jansson.h>

/* Prints each project's quota, weight, GPUs in use and borrowed, pending
 * jobs and decayed recent use. Returns 0, or 1 when out of memory or the
 * output cannot be written. */
int cli_usage_share_print(json_t *root);

#endif
