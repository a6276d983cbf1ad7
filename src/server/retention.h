/*
 * The retention sweeper: a thread that, every sweep interval, forgets
 * finished jobs (rows, events, logs, checkpoint directories) and events
 * older than tide.yaml's `retention:` settings, a bounded batch at a time
 * under the server's lock and the files outside it.
 */
#ifndef TIDE_SERVER_RETENTION_H
#define TIDE_SERVER_RETENTION_H

#include "server/server.h"

/* Starts the sweeper (nothing to start when everything is kept forever).
 * Returns 0 or TIDE_EIO with err. */
int retention_start(struct server *srv, struct tide_err *err);

/* Stops it; call once srv->stopping is set. No-op when not started. */
void retention_stop(struct server *srv);

/* One sweep now (the thread's body; exposed for the thread and for a
 * shutdown-free caller). Returns how many jobs and events were dropped. */
size_t retention_sweep(struct server *srv, int64_t now_ms);

#endif
