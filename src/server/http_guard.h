/*
 * Keeping the HTTP front answering under connection floods (slowloris):
 * a cap on connections per client address (127.0.0.1 and ::1 exempt: local agents,
 * tide up and tests), a short timeout while a request's headers arrive, the
 * long one once they are in, and an open-file limit raised so that the
 * connection limit can be reached at all. Plugged into libmicrohttpd by
 * http.c (docs/api.md "Connection limits").
 */
#ifndef TIDE_SERVER_HTTP_GUARD_H
#define TIDE_SERVER_HTTP_GUARD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <sys/socket.h>

/* Open connections one non-loopback address may hold. */
#define HTTP_GUARD_PER_IP_LIMIT 64
/* Connections in all, lowered when the open-file limit cannot cover them. */
#define HTTP_GUARD_CONNECTION_LIMIT 8192
/* Seconds a connection may stay silent before its request's headers are
 * complete (and between requests), and once they are. */
#define HTTP_GUARD_HEADER_TIMEOUT_S 10
#define HTTP_GUARD_IDLE_TIMEOUT_S 120

/* Raises the soft open-file limit to the hard one and returns the total
 * connection limit to give libmicrohttpd: HTTP_GUARD_CONNECTION_LIMIT, or
 * less, leaving 256 descriptors for the store, logs and agents' files. */
unsigned http_guard_connection_limit(void);

/* Whether addr is this machine's own client address: 127.0.0.1, ::1 or
 * ::ffff:127.0.0.1 (other 127/8 addresses are limited like any client). */
bool http_guard_is_loopback(const struct sockaddr *addr, socklen_t len);

/* MHD_OPTION_ACCEPT_POLICY_CALLBACK: refuses a non-loopback address that
 * already holds HTTP_GUARD_PER_IP_LIMIT connections. */
enum MHD_Result http_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);

/* Counts a connection from addr opened (delta +1) or closed (-1); loopback
 * is not counted. http_guard_notify does this for every connection. */
void http_guard_count(const struct sockaddr *addr, socklen_t len, int delta);

/* Connections counted for addr now. */
unsigned http_guard_held(const struct sockaddr *addr, socklen_t len);

/* MHD_OPTION_NOTIFY_CONNECTION: counts connections per address and gives a
 * new one the header timeout. */
void http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);

/* The request's headers are in: the long timeout from now on. */
void http_guard_headers_done(struct MHD_Connection *conn);

/* The request is answered: the next one's headers get the short timeout. */
void http_guard_request_done(struct MHD_Connection *conn);

#endif
