/* Filling and naming struct tide_err. */
#include "common/tide_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

int tide_err_set(struct tide_err *err, int code, const char *field, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    /* cut inside a character, or holding a client's bytes that are not
     * UTF-8, it is no text: a reply could not carry it */
    utf8_trim_tail(err->message);
    utf8_scrub(err->message);
    utf8_trim_tail(err->field);
    utf8_scrub(err->field);
    return code;
}

void tide_err_clear(struct tide_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

const char *tide_errcode_name(int code)
{
    switch (code) {
    case TIDE_OK: return "ok";
    case TIDE_EINVAL: return "bad_request";
    case TIDE_ENOENT: return "not_found";
    case TIDE_EAUTH: return "unauthorized";
    case TIDE_EPERM: return "forbidden";
    case TIDE_ECONFLICT: return "conflict";
    case TIDE_ETOOBIG: return "too_large";
    case TIDE_EBUSY: return "too_many_requests";
    case TIDE_ENOMEM: return "internal";
    default: return "internal";
    }
}

int tide_errcode_http_status(int code)
{
    switch (code) {
    case TIDE_OK: return 200;
    case TIDE_EINVAL: return 400;
    case TIDE_ENOENT: return 404;
    case TIDE_EAUTH: return 401;
    case TIDE_EPERM: return 403;
    case TIDE_ECONFLICT: return 409;
    case TIDE_ETOOBIG: return 413;
    case TIDE_EBUSY: return 429;
    default: return 500;
    }
}
