/*
 * Errors meant for a person: which field, what was wrong, what is allowed.
 * Functions that can fail return 0 or a negative TIDE_E* code and fill an
 * optional struct tide_err. This header is shared by the core and the shells.
 */
#ifndef TIDE_ERR_H
#define TIDE_ERR_H

enum tide_errcode {
    TIDE_OK = 0,
    TIDE_EINVAL = -1,    /* bad input: 400 */
    TIDE_ENOENT = -2,    /* no such thing: 404 */
    TIDE_EAUTH = -3,     /* missing or bad credentials: 401 */
    TIDE_EPERM = -4,     /* credentials fine, not allowed: 403 */
    TIDE_ECONFLICT = -5, /* wrong state for this: 409 */
    TIDE_ETOOBIG = -6,   /* body or value too large: 413 */
    TIDE_EIO = -7,       /* storage, network or OS failure: 500 */
    TIDE_ENOMEM = -8,
    TIDE_EBUSY = -9,     /* too many requests, retry later: 429 */
};

struct tide_err {
    int code;
    char field[64];
    char message[384];
};

/* Fills err (if not NULL) and returns code, so callers can `return tide_err_set(...)`. */
int tide_err_set(struct tide_err *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Clears err to "no error". */
void tide_err_clear(struct tide_err *err);

/* A short, stable name of a code: "bad_request", "not_found", ... */
const char *tide_errcode_name(int code);

/* The HTTP status that a code maps to. */
int tide_errcode_http_status(int code);

#endif
