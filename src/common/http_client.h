/*
 * A small blocking HTTP/JSON client, shared by the CLI and the agent. One
 * call, one request; thread-safe after http_client_global_init(). http://
 * URLs go over plain sockets (common/http_plain.h); https:// ones, and
 * http_stream, over libcurl, loaded (dlopen) only when first needed, so a
 * process that talks to http:// servers alone never maps it.
 * Each thread keeps its own connections open between its requests (reused
 * when idle under 5 s, the server closes them after 10 s), closed when the
 * thread ends, at http_client_thread_release, or when the process exits;
 * a forked child does not close or use its parent's. Sockets are
 * close-on-exec. A request that went out on a kept connection the server
 * had closed is repeated once on a new connection, as HTTP clients do;
 * that counts as sent (see http_request_extra.unsent).
 */
#ifndef TIDE_HTTP_CLIENT_H
#define TIDE_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/tide_err.h"

struct http_response {
    long status; /* HTTP status, 0 when no answer came */
    char *body;  /* NUL-terminated, owned by the response */
    size_t len;
};

/* Call once per process before starting threads, after
 * http_client_set_ca/_identity. Loads and initialises libcurl now when a
 * CA or client identity was set (TLS is expected); otherwise the first
 * https:// request does, and a process using only http:// never does.
 * Returns 0 or TIDE_EIO (libcurl.so.4 missing or failing to start). */
int http_client_global_init(void);

/* Makes every later request of this process verify an https:// server
 * against the PEM certificates in ca_path (a CA or the server's own
 * self-signed certificate) instead of the system's CAs, host name included.
 * NULL goes back to the system's CAs. Verification is never turned off.
 * Call before starting threads. Returns 0, or TIDE_EINVAL naming field
 * (the option the path came from, e.g. "--ca") when the file cannot be read
 * or holds no PEM certificate. */
int http_client_set_ca(const char *ca_path, const char *field, struct tide_err *err);

/* Makes every later request present this client certificate and key (PEM
 * files) to servers that ask for one; NULL for both presents none. Same
 * rules and errors as http_client_set_ca. */
int http_client_set_identity(const char *cert_path, const char *key_path, const char *field,
                             struct tide_err *err);

/* Sends method to url with an optional bearer token and JSON body (NULL for
 * none). Fills resp (release with http_response_release) when the server
 * answered at all, whatever the status. Returns 0, or TIDE_EIO with err set
 * when the server could not be reached or timed out; for an http:// URL
 * also TIDE_EINVAL (a URL it cannot parse, a token with a control
 * character) or TIDE_ETOOBIG (an answer over HTTP_PLAIN_BODY_MAX). */
int http_request(const char *method, const char *url, const char *token, const char *json_body,
                 long timeout_ms, struct http_response *resp, struct tide_err *err);

/* Optional extras of http_request_ex. */
struct http_request_extra {
    const char *idempotency_key; /* sent as Idempotency-Key when not NULL */
    int repeatable; /* the server does nothing twice for it (as with a key,
                     * or GET, HEAD, PUT, DELETE): it may be sent again when a
                     * kept connection died under it; else that fails */
    int unsent; /* out: 1 when it failed before any of the request left
                 * (no connection, TLS refused, and it was not sent on a kept
                 * connection either), so another server may be tried
                 * without risk of doing it twice */
};

/* http_request with extras (may be NULL). */
int http_request_ex(const char *method, const char *url, const char *token,
                    const char *json_body, long timeout_ms, struct http_request_extra *extra,
                    struct http_response *resp, struct tide_err *err);

/* Streams a GET response body to on_data as it arrives (logs -f), over
 * libcurl whatever the scheme. Stops when the server closes or on_data
 * returns non-zero. Returns 0 or TIDE_EIO; the HTTP status lands in *status. */
int http_stream(const char *url, const char *token, long *status,
                int (*on_data)(const char *data, size_t len, void *ctx), void *ctx,
                struct tide_err *err);

void http_response_release(struct http_response *resp);

/* Makes the calling thread's requests (this one's only) give up with
 * TIDE_EIO once *flag is non-zero: none starts, and one under way stops
 * within about a second, or at once when a signal interrupts the thread.
 * flag must outlive the thread's requests; NULL turns it off. For a thread
 * that must be stopped before the process exits (the agent's long poll). */
void http_client_cancel_on(const int *flag);

/* Whether the calling thread's flag of http_client_cancel_on is set: a
 * request that failed then says nothing about the server. */
bool http_client_cancelled(void);

/* Closes the calling thread's kept connections (plain and libcurl's) and
 * frees its handle now rather than when the thread ends; a later request
 * opens new ones. */
void http_client_thread_release(void);

#endif
