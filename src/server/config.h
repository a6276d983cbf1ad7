/*
 * tide.yaml for the server: the settings of the scheduler and of the
 * server itself. A bad file is refused at start with file:line, the key and
 * the reason. Sections for later features (pools, queues, projects,
 * autoscaler) are refused by name until the server implements them.
 */
#ifndef TIDE_SERVER_CONFIG_H
#define TIDE_SERVER_CONFIG_H

#include "common/tide_err.h"
#include "core/sched.h"
#include "server/server.h"

/* Reads path and overrides the fields of cfg and sc it sets. */
int config_load(const char *path, struct server_config *cfg, struct sched_config *sc,
                struct tide_err *err);

#endif
