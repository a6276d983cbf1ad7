/*
 * Network checks for `tide up`: is a loopback port free, which free port
 * can the server take, and does a tide server answer /healthz at a URL.
 */
#ifndef TIDE_CLI_UP_NET_H
#define TIDE_CLI_UP_NET_H

#include "common/tide_err.h"

/* Finds a port on 127.0.0.1 nobody listens on now (the kernel's choice).
 * Another program may take it before the server does; `tide up` then
 * reports the server's failure. Returns the port or TIDE_EIO. */
int up_net_free_port(struct tide_err *err);

/* 1 when port on 127.0.0.1 can be bound now, 0 when it is taken. */
int up_net_port_free(int port);

/* 1 when base_url/healthz answers 200 within timeout_ms, else 0. */
int up_net_healthy(const char *base_url, long timeout_ms);

#endif
