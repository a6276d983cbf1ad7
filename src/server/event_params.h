/*
 * The query parameters of GET /v1/events turned into a store filter, kept
 * apart from the HTTP layer so the rules can be tested on their own: which
 * names exist, what each accepts, and an error naming the parameter for
 * anything else.
 */
#ifndef TIDE_SERVER_EVENT_PARAMS_H
#define TIDE_SERVER_EVENT_PARAMS_H

#include "store/store_events.h"

/* The parameter names GET /v1/events knows, NULL-terminated. */
extern const char *const event_params_names[];

/* Room for the kind patterns of one request (the filter points into it). */
struct event_kinds_buf {
    char text[512];
};

/* Reads the parameters through get(ctx, name) (NULL when absent) into f.
 * Strings in f point into get's values and into kb. Returns 0, or
 * TIDE_EINVAL with err->field the parameter and a message saying what it
 * accepts. */
int event_params_parse(const char *(*get)(void *ctx, const char *name), void *ctx,
                       struct event_filter *f, struct event_kinds_buf *kb, struct tide_err *err);

/* A time as Unix seconds ("1764680000", "1764680000.5") or a UTC date
 * ("2025-12-02", "2025-12-02T13:30", "2025-12-02T13:30:05Z"); 0 and *out_ms
 * set, or -1. */
int event_params_time_ms(const char *s, int64_t *out_ms);

#endif
