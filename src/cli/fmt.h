/*
 * Short human renderings of values for tables: ages and durations ("12s",
 * "3m", "2h", "4d"), dates, and reading numbers and strings out of
 * JSON objects whose fields may be missing.
 */
#ifndef TIDE_CLI_FMT_H
#define TIDE_CLI_FMT_H

#include <jansson.h>
#include <stddef.h>

/* Writes a duration of seconds (negative counts as 0) into buf: the largest
 * whole unit of s, m, h or d. */
void cli_fmt_duration(double seconds, char *buf, size_t size);

/* Unix seconds with a fraction from the wall clock. */
double cli_now(void);

/* Writes the time value v (Unix seconds, or null) as a local date and time
 * with its age ("2025-12-02 13:33:20 (12s ago)"), or "-" for null. */
void cli_fmt_time(json_t *v, char *buf, size_t size);

/* A pending job's "eta" object (docs/api.md) as "in 5m", "now", or "-"
 * when there is none; with long set, "in 5m at 2026-12-03 07:05:00
 * (basis max_runtime)" and "unknown (basis unknown)". */
void cli_fmt_eta(json_t *eta, int long_form, char *buf, size_t size);

/* The number in v (integer or real) or fallback when it is neither. */
double cli_json_number(json_t *v, double fallback);

/* The string in v, or fallback when v is not a string. */
const char *cli_json_text(json_t *v, const char *fallback);

#endif
