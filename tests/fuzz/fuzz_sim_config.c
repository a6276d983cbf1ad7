/*
 * Fuzz target: `tide sim --config FILE` (tide.yaml's form, sim/sim_config.c)
 * as cmd_sim.c reads it: YAML to JSON, then the simulator's config, then
 * its validation.
 */
#include <stdlib.h>

#include "cli/yaml_json.h"
#include "fuzz.h"
#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *root = NULL;
    struct tide_err err;
    tide_err_clear(&err);
    if (cli_yaml_config_to_json((const char *)data, size, "sim.yaml", &root, &err) != 0)
        return 0;
    struct sim_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        json_decref(root);
        return 0;
    }
    sim_config_defaults(cfg);
    tide_err_clear(&err);
    int rc = sim_config_from_json(cfg, root, &err);
    if (rc == 0)
        rc = sim_config_validate(cfg, &err);
    if (rc != 0 && !err.message[0])
        abort(); /* every refusal says why */
    free(cfg);
    json_decref(root);
    return 0;
}
