/*
 * Fuzz target: the YAML to JSON converter of `tide submit job.yaml` and
 * `tide sim --config` (cli/yaml_json.c).
 */
#include <stdlib.h>

#include "cli/yaml_json.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *out = NULL;
    struct tide_err err;
    tide_err_clear(&err);
    int rc = cli_yaml_to_json((const char *)data, size, "fuzz.yaml", &out, &err);
    if (rc != 0 && (out || !err.message[0]))
        abort(); /* a failure leaves nothing and says why */
    if (rc == 0 && !out)
        abort();
    if (out) {
        char *s = json_dumps(out, JSON_ENCODE_ANY | JSON_COMPACT);
        free(s);
    }
    json_decref(out);
    return 0;
}
