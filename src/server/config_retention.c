/* tide.yaml `retention:` (docs/config.md): how long finished jobs and
 * events are kept, and how often the sweeper looks. */
#include <string.h>

#include "server/config.h"

#define RETENTION_MAX_S (100L * 365 * 86400)

static int retention_key(struct config_ctx *c, const char *key, const char *name,
                         const yaml_node_t *v)
{
    long n;
    int rc;
    if (!strcmp(name, "finished_jobs_s")) {
        if (!(rc = config_want_int(c, v, key, 0, RETENTION_MAX_S, &n)))
            c->cfg->retention_jobs_s = n;
    } else if (!strcmp(name, "events_s")) {
        if (!(rc = config_want_int(c, v, key, 0, RETENTION_MAX_S, &n)))
            c->cfg->retention_events_s = n;
    } else if (!strcmp(name, "sweep_s")) {
        if (!(rc = config_want_int(c, v, key, 1, 86400, &n)))
            c->cfg->retention_sweep_s = (int)n;
    } else {
        rc = config_fail(c, v, key, "unknown key (known: finished_jobs_s, events_s, sweep_s)%s", "");
    }
    return rc;
}

int config_section_retention(struct config_ctx *c, const char *name, const yaml_node_t *v)
{
    return config_walk_mapping(c, name, v, retention_key);
}
