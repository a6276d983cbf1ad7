/*
 * Compact JSON text of a jansson value, the same bytes as
 * json_dumps(v, JSON_COMPACT) writes, written straight into one growing
 * buffer. jansson's dump calls a callback per token, checks every string's
 * UTF-8 one code point at a time and keeps a table of the containers it is
 * in; for a job's reply (some forty values) that was ~10 us, the largest
 * single cost of a POST /v1/jobs answer. This writer takes about a third
 * of its instructions; json_buf writes a reply of known shape piece by
 * piece, with no jansson values built just to be written.
 */
#ifndef TIDE_COMMON_JSON_WRITE_H
#define TIDE_COMMON_JSON_WRITE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Containers nested deeper than this are refused (as a cycle would be). */
#define JSON_WRITE_MAX_DEPTH 2048

/* The compact text of v (an object, array or any other value), followed by
 * '\n' when newline. Returns a new NUL-terminated string the caller frees,
 * its length (without the NUL) in *len (len may be NULL). NULL when out
 * of memory, when v holds what json_dumps also refuses (a string that is
 * not UTF-8, a real that is not finite), or containers nested over
 * JSON_WRITE_MAX_DEPTH deep (where json_dumps would look for a cycle). */
char *json_write_compact(const json_t *v, bool newline, size_t *len);

/* JSON written piece by piece, for a reply whose shape is known (a job just
 * inserted) without building jansson values first. Start from {0}; a
 * failure (out of memory, or what json_write_compact refuses) is kept and
 * reported by json_buf_finish. */
struct json_buf {
    char *data;
    size_t len, cap;
    bool failed;
};
/* text as it is: punctuation, keys already quoted, literals. */
void json_buf_text(struct json_buf *b, const char *text);
/* s (UTF-8) as a quoted, escaped JSON string. */
void json_buf_string(struct json_buf *b, const char *s);
void json_buf_integer(struct json_buf *b, json_int_t v);
/* v as jansson writes a real (see json_write_compact). */
void json_buf_real(struct json_buf *b, double v);
/* The text written (NUL-terminated, length in *len unless len is NULL), a
 * new string the caller frees; NULL after any failure. b is empty again
 * either way. */
char *json_buf_finish(struct json_buf *b, size_t *len);
/* Frees what b holds (for a text abandoned before json_buf_finish). */
void json_buf_release(struct json_buf *b);

#endif
