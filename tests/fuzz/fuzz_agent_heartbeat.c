/*
 * Fuzz target: the server's side of a heartbeat, the body of POST
 * /v1/agent/heartbeat: its task reports and GPU telemetry
 * (api_agent_parse_reports, api_agent_update_telemetry) for a node with
 * four GPUs. A refusal is a 4xx JSON error, and a refused telemetry
 * changes nothing.
 */
#include <stdlib.h>

#include "core/reconcile.h"
#include "fuzz.h"
#include "server/server.h"

#define FUZZ_MAX_REPORTS 1024

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct task_report reports[FUZZ_MAX_REPORTS];
    json_t *body = json_loadb((const char *)data, size, 0, NULL);
    if (!json_is_object(body)) {
        json_decref(body);
        return 0;
    }
    struct node *node = calloc(1, sizeof *node);
    if (!node) {
        json_decref(body);
        return 0;
    }
    node->ngpus = 4;
    for (int g = 0; g < 4; g++)
        node->gpus[g].index = g * 2;
    struct api_reply reply = {.status = 200};
    size_t n = 0;
    if (api_agent_parse_reports(json_object_get(body, "tasks"), reports, &n, &reply) != 0) {
        if (reply.status < 400 || reply.status > 499)
            abort();
    } else if (n > FUZZ_MAX_REPORTS) {
        abort();
    }
    json_decref(reply.json);
    reply = (struct api_reply){.status = 200};
    struct node before = *node;
    if (api_agent_update_telemetry(node, json_object_get(body, "gpus"), &reply) != 0) {
        if (reply.status < 400 || reply.status > 499 || memcmp(&before, node, sizeof before))
            abort();
    }
    json_decref(reply.json);
    json_decref(body);
    free(node);
    return 0;
}
