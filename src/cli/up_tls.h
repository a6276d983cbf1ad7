/*
 * The certificates `tide up --tls` runs with: a CA made for this machine,
 * a server certificate it signed for localhost, 127.0.0.1 and the host
 * name, and an agent client certificate, as PEM files (keys mode 0600).
 */
#ifndef TIDE_CLI_UP_TLS_H
#define TIDE_CLI_UP_TLS_H

#include <time.h>

#include "common/tide_err.h"

/* The files up_tls_ensure leaves in its directory. */
#define UP_TLS_CA "ca.crt"
#define UP_TLS_CA_KEY "ca.key"
#define UP_TLS_SERVER_CERT "server.crt"
#define UP_TLS_SERVER_KEY "server.key"
#define UP_TLS_AGENT_CERT "agent.crt"
#define UP_TLS_AGENT_KEY "agent.key"

/* Makes sure dir (which must exist) holds the six files above: keeps them
 * when all are there and none of the certificates expires within 30 days
 * (so a CA the user already trusts stays valid), else writes a new set.
 * *created says which happened. Returns 0, or TIDE_EIO with err naming the
 * file or the GnuTLS step that failed. */
int up_tls_ensure(const char *dir, int *created, struct tide_err *err);

/* The same as of now (for tests: a set's age without waiting a year). */
int up_tls_ensure_at(const char *dir, time_t now, int *created, struct tide_err *err);

#endif
