/*
 * A small HTTP/1.1 client over plain TCP sockets, for http:// servers: the
 * agent's and the CLI's (http_client.h sends http:// requests here and only
 * https:// through libcurl). It exists so that neither maps libcurl's ~30
 * shared libraries nor pays its start-up and per-request work: see
 * docs/cli.md, "Speed". Each thread keeps its connections open between its
 * requests, as http_client.h describes; sockets are close-on-exec.
 */
#ifndef TIDE_HTTP_PLAIN_H
#define TIDE_HTTP_PLAIN_H

#include "common/http_client.h"
#include "common/tide_err.h"

/* The largest answer body accepted; a bigger one is an error, not cut. */
#define HTTP_PLAIN_BODY_MAX (512L * 1024 * 1024)

/* How long a kept connection may sit unused and still be reused: under the
 * server's HTTP_GUARD_HEADER_TIMEOUT_S (10 s), after which it closes a
 * silent connection, so that a request does not race that close. */
#define HTTP_PLAIN_KEEP_IDLE_S 5

/* Optional request and answer extras. */
struct http_plain_extra {
    const char *idempotency_key; /* sent as Idempotency-Key when not NULL */
    int repeatable; /* the server does nothing twice for it (as with a key,
                     * or GET, HEAD, PUT, DELETE): it may be sent again when a
                     * kept connection died under it */
    char leader[256];            /* out: the X-Tide-Leader header, "" when none */
    int unsent; /* out: 1 when none of the request can have left (no
                 * connection could be made, and it had not gone out on a
                 * kept connection either), so another server may be tried */
};

/* Whether this client takes url: http:// with a numeric host (IPv4,
 * [IPv6]) or localhost. A host name goes to libcurl, whose resolver keeps
 * to the request's time limit and its cancellation; glibc's getaddrinfo
 * here would block for as long as the name servers take. */
int http_plain_handles(const char *url);

/* Sends method to url (http://HOST[:PORT]/PATH; HOST a name, an IPv4
 * address or [IPv6]) with an optional bearer token and JSON body, on the
 * calling thread's kept connection to HOST:PORT when it has one idle for
 * under HTTP_PLAIN_KEEP_IDLE_S, else on a new one. A request that went out
 * on a kept connection the server had closed (the send fails, or the
 * connection ends before any byte of an answer) is sent once more on a new
 * connection. Waits at most timeout_ms in all (and at most 5 s to connect);
 * gives up at once when the thread's cancel flag (http_client_cancel_on) is
 * set, and within about a second when it becomes set. On any answer fills
 * resp (release with http_response_release) whatever the status and
 * returns 0. Returns TIDE_EIO with err->message "METHOD URL: reason" when
 * no answer came (refused, unreachable, timed out, cancelled, closed early,
 * not HTTP), TIDE_EINVAL for a URL it cannot parse or a token or key with a
 * control character, TIDE_ETOOBIG for an answer over HTTP_PLAIN_BODY_MAX.
 * extra may be NULL. */
int http_plain_request(const char *method, const char *url, const char *token,
                       const char *json_body, long timeout_ms, struct http_plain_extra *extra,
                       struct http_response *resp, struct tide_err *err);

/* Closes the calling thread's kept connections now (they close by
 * themselves when the thread ends). In a forked child, forgets those it
 * inherited without ending them for the parent. */
void http_plain_thread_release(void);

#endif
