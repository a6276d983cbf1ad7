/*
 * A small HTTP/1.1 client over a plain TCP socket, for the CLI's http://
 * servers (loopback, usually). One request per connection, no TLS: https://
 * goes through common/http_client.h (libcurl, loaded only when needed).
 * It exists so that a `tide submit` neither maps libcurl's ~30 shared
 * libraries nor pays their start-up: see docs/cli.md, "Speed".
 */
#ifndef TIDE_CLI_PLAIN_HTTP_H
#define TIDE_CLI_PLAIN_HTTP_H

#include <stddef.h>

#include "common/http_client.h"
#include "common/tide_err.h"

/* The largest answer body accepted; a bigger one is an error, not cut. */
#define PLAIN_HTTP_BODY_MAX (512L * 1024 * 1024)

/* Optional request and answer extras. */
struct plain_http_extra {
    const char *idempotency_key; /* sent as Idempotency-Key when not NULL */
    char leader[256];            /* out: the X-Tide-Leader header, "" when none */
    int sent;                    /* out: 1 once any of the request may have left */
};

/* Whether url starts with "http://" (the only scheme this client speaks). */
int plain_http_handles(const char *url);

/* Sends method to url (http://HOST[:PORT]/PATH; HOST a name, an IPv4
 * address or [IPv6]) with an optional bearer token and JSON body, and waits
 * at most timeout_ms in all (and at most 5 s to connect). On any answer fills resp (release with
 * http_response_release) whatever the status and returns 0. Returns
 * TIDE_EIO with err->message "METHOD URL: reason" when no answer came
 * (refused, unreachable, timed out, closed early, not HTTP), TIDE_EINVAL for
 * a URL it cannot parse, TIDE_ETOOBIG for an answer over
 * PLAIN_HTTP_BODY_MAX. extra may be NULL. */
int plain_http_request(const char *method, const char *url, const char *token,
                       const char *json_body, long timeout_ms, struct plain_http_extra *extra,
                       struct http_response *resp, struct tide_err *err);

#endif
