/*
 * How the API listens: HTTPS with the PEM certificate and key the operator
 * gave (--tls-cert/--tls-key or tide.yaml server.tls_cert/tls_key), agent
 * client certificates checked against --tls-client-ca when one is given,
 * and plain HTTP only on loopback unless --insecure-plain-http says so.
 */
#ifndef TIDE_SERVER_HTTP_TLS_H
#define TIDE_SERVER_HTTP_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/tide_err.h"

struct server_config;
struct MHD_Connection;

/* The PEM files read into memory for libmicrohttpd (it copies them when
 * the daemon starts). All NULL when serving plain HTTP. */
struct http_tls {
    char *cert, *key, *client_ca;
};

/* Checks cfg's TLS settings against its listen address and reads the files.
 * Returns 0 (release t with http_tls_release), or TIDE_EINVAL naming the
 * option: a key without a certificate (or the reverse), a file that cannot
 * be read or holds no PEM certificate or key, a client CA without TLS, or
 * plain HTTP on an address other than 127.x.x.x without insecure_plain_http. */
int http_tls_load(const struct server_config *cfg, struct http_tls *t, struct tide_err *err);

/* Frees what http_tls_load read (the key is wiped first); accepts a zeroed t. */
void http_tls_release(struct http_tls *t);

/* True when host (an IPv4 address as text) is on 127.0.0.0/8. */
bool http_tls_is_loopback(const char *host);

/* For a server with a client CA: 0 when the connection presented a client
 * certificate that the CA signed, else TIDE_EAUTH with err saying why. */
int http_tls_check_client(struct MHD_Connection *conn, struct tide_err *err);

/* For a server with tls_client_cn_is_node, after http_tls_check_client: 0
 * when the client certificate's common name is name (a node's), else
 * TIDE_EPERM (TIDE_EAUTH without a certificate) with err saying whose it is. */
int http_tls_client_name_is(struct MHD_Connection *conn, const char *name, struct tide_err *err);

#endif
