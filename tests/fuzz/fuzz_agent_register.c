/*
 * Fuzz target: the server's side of agent registration, the body of POST
 * /v1/agent/register read into a node (api_agent_parse_registration). A
 * refusal is a 4xx JSON error that names what was wrong.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "server/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct api_reply reply = {.status = 200};
    struct node *node = calloc(1, sizeof *node);
    if (!node)
        return 0;
    json_t *body = json_loadb((const char *)data, size, 0, NULL);
    if (json_is_object(body) && api_agent_parse_registration(body, node, &reply) != 0) {
        json_t *e = json_object_get(reply.json, "error");
        if (reply.status < 400 || reply.status > 499 || !json_string_value(json_object_get(e, "message")))
            abort();
    } else if (json_is_object(body)) {
        if (!node->name[0] || node->ngpus < 0 || node->ngpus > TIDE_MAX_GPUS_PER_NODE)
            abort();
    }
    json_decref(reply.json);
    json_decref(body);
    free(node);
    return 0;
}
