/*
 * Fuzz target: the server's tide.yaml reader (server/config*.c), through a
 * temporary file since config_load reads a path, on top of the defaults
 * server_main starts from.
 */
#include <stdio.h>
#include <unistd.h>

#include "core/sched.h"
#include "fuzz.h"
#include "server/config.h"
#include "server/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/tide-fuzz-config-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    if (size && fwrite(data, 1, size, f) != size) {
        fclose(f);
        return 0;
    }
    fclose(f);
    struct server_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return 0;
    cfg->node_timeout_ms = 30000;
    cfg->heartbeat_interval_ms = 1000;
    queue_set_defaults(&cfg->queues);
    fairshare_init(&cfg->fairshare, 3600);
    struct sched_config sc;
    sched_config_defaults(&sc);
    struct tide_err err;
    tide_err_clear(&err);
    if (config_load(path, cfg, &sc, &err) != 0 && !err.message[0])
        abort(); /* every refusal says why */
    free(cfg);
    return 0;
}
