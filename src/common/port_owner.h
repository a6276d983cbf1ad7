/*
 * Who listens on a TCP port of this machine, from /proc: used to name the
 * holder when a server cannot bind its port.
 */
#ifndef TIDE_PORT_OWNER_H
#define TIDE_PORT_OWNER_H

#include <stddef.h>

/* Writes "pid N (COMMAND LINE)" of a process with a listening socket on
 * port into out. Returns 0, or -1 when none is found (another user's
 * process, no /proc, or nobody listens). */
int port_owner_describe(int port, char *out, size_t cap);

#endif
