/*
 * GPU health in heartbeats (core/gpu_health.h, docs/health.md): the faults
 * agents report per GPU and the node's health probe result, applied to the
 * cluster before the heartbeat's reconcile and persisted after it, with an
 * event for each change and counters for /metrics.
 */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "core/gpu_health.h"
#include "server/server.h"
#include "store/store_health.h"

#define PROBE_OUTPUT_MAX 128

const char *const gpu_fault_kind_names[GPU_FAULT_KIND_COUNT] = {"xid", "ecc", "temp", "lost",
                                                                "other"};

static enum gpu_fault_kind fault_kind(const char *fault, bool node_wide)
{
    if (node_wide || !strncmp(fault, "lost", 4))
        return GPU_FAULT_LOST;
    for (int k = 0; k < GPU_FAULT_LOST; k++) {
        size_t n = strlen(gpu_fault_kind_names[k]);
        if (!strncmp(fault, gpu_fault_kind_names[k], n) && (fault[n] == ' ' || !fault[n]))
            return (enum gpu_fault_kind)k;
    }
    return GPU_FAULT_OTHER;
}

static struct gpu *find_gpu(struct node *node, long long index)
{
    for (int g = 0; g < node->ngpus; g++)
        if (node->gpus[g].index == index)
            return &node->gpus[g];
    return NULL;
}

/* Checks every health field first, so that a malformed one changes nothing. */
static int check_fields(json_t *body, struct api_reply *reply)
{
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(body, "gpus"), i, g)
    {
        json_t *health = json_object_get(g, "health"), *fault = json_object_get(g, "fault"),
               *seq = json_object_get(g, "fault_seq"), *wide = json_object_get(g, "node_wide");
        if (health && (!json_is_string(health) || (strcmp(json_string_value(health), "ok") &&
                                                   strcmp(json_string_value(health), "fault"))))
            return api_error_msg(reply, TIDE_EINVAL, "health",
                                 "gpus[%zu].health: must be \"ok\" or \"fault\"", i), -1;
        if (fault && (!json_is_string(fault) || json_string_length(fault) >= 48))
            return api_error_msg(reply, TIDE_EINVAL, "fault",
                                 "gpus[%zu].fault: must be a string under 48 characters", i), -1;
        if (seq && (!json_is_integer(seq) || json_integer_value(seq) < 0))
            return api_error_msg(reply, TIDE_EINVAL, "fault_seq",
                                 "gpus[%zu].fault_seq: must be an integer >= 0", i), -1;
        if (wide && !json_is_boolean(wide))
            return api_error_msg(reply, TIDE_EINVAL, "node_wide",
                                 "gpus[%zu].node_wide: must be true or false", i), -1;
    }
    json_t *probe = json_object_get(body, "health_probe");
    if (probe && (!json_is_object(probe) || !json_is_boolean(json_object_get(probe, "ok"))))
        return api_error_msg(reply, TIDE_EINVAL, "health_probe",
                             "health_probe: must be an object with \"ok\": true or false"), -1;
    json_t *out = json_object_get(probe, "output");
    if (out && !json_is_string(out))
        return api_error_msg(reply, TIDE_EINVAL, "health_probe",
                             "health_probe.output: must be a string"), -1;
    return 0;
}

/* A GPU's fault_seq counts the faults its agent saw in one run (NVML's
 * count lives in the agent's memory): a heartbeat of another run (the
 * agent restarted) starts every count of the node at 0 again, so the new
 * run's first fault is heard, not taken for one the server had. Not
 * stored until a fault comes: the stored run differs from the agent's
 * all the same, and a reload resets the count again. */
static void adopt_run(struct node *node, const char *run)
{
    for (int g = 0; g < node->ngpus; g++) {
        struct gpu *gpu = &node->gpus[g];
        if (strcmp(gpu->fault_run, run)) {
            /* a count of no known run (a row stored before runs were, or
             * never set) is taken as this run's unless it is above the
             * agent's (below): reset, a running agent's count that the
             * server had acted on would fault its GPUs again at the first
             * heartbeat after an upgrade */
            if (gpu->fault_run[0])
                gpu->fault_seq = 0;
            snprintf(gpu->fault_run, sizeof gpu->fault_run, "%s", run);
        }
    }
}

int api_health_from_heartbeat(struct server *srv, struct node *node, json_t *body, int64_t now_ms,
                              struct action_list *out, struct health_notes *notes,
                              struct api_reply *reply)
{
    memset(notes, 0, sizeof *notes);
    if (check_fields(body, reply) != 0)
        return -1;
    struct gpu_health_config cfg = {srv->cfg.node_fault_limit,
                                    srv->cfg.node_fault_window_s * 1000};
    const char *run = json_string_value(json_object_get(body, "run")); /* api_agent.c checked it */
    adopt_run(node, run ? run : "");
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(body, "gpus"), i, g)
    {
        const char *health = json_string_value(json_object_get(g, "health"));
        struct gpu *gpu = find_gpu(node, json_integer_value(json_object_get(g, "index")));
        json_int_t seq = json_integer_value(json_object_get(g, "fault_seq"));
        /* one run's count never goes down: lower is a count that started
         * again (an agent restarted, its run unknown: a row stored before
         * runs were), whose faults are all new */
        if (gpu && seq < gpu->fault_seq)
            gpu->fault_seq = 0;
        if (!gpu || !health || strcmp(health, "fault") || seq <= gpu->fault_seq ||
            notes->nfaults >= HEALTH_MAX_FAULTS)
            continue;
        /* A count the server has seen is no new fault (the check above),
         * a higher one is; faults between two heartbeats each count (up to
         * a bound). */
        int64_t n = seq - gpu->fault_seq;
        if (n > HEALTH_MAX_FAULTS)
            n = HEALTH_MAX_FAULTS;
        gpu->fault_seq = seq;
        const char *fault = json_string_value(json_object_get(g, "fault"));
        bool wide = json_is_true(json_object_get(g, "node_wide"));
        int bits = 0;
        for (int64_t k = 0; k < n && bits >= 0; k++) {
            int b = gpu_health_fault(&srv->cluster, node, gpu->index, fault ? fault : "fault",
                                     wide, &cfg, now_ms, out);
            bits = b < 0 ? b : bits | b;
            srv->gpu_faults[fault_kind(gpu->fault, wide)] += b >= 0;
        }
        if (bits < 0)
            return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory"), -1;
        notes->faults[notes->nfaults].gpu_index = gpu->index;
        snprintf(notes->faults[notes->nfaults].fault, sizeof notes->faults[0].fault, "%s",
                 gpu->fault);
        notes->faults[notes->nfaults].count = (int)n;
        notes->faults[notes->nfaults++].bits = bits;
    }
    json_t *probe = json_object_get(body, "health_probe");
    if (probe) {
        char output[PROBE_OUTPUT_MAX];
        const char *o = json_string_value(json_object_get(probe, "output"));
        utf8_copy(output, sizeof output, o ? o : "");
        notes->probe =
            gpu_health_probe(node, json_is_true(json_object_get(probe, "ok")), output, now_ms);
    }
    return 0;
}

int api_health_persist(struct server *srv, int64_t node_id, const struct health_notes *notes,
                       int64_t now_ms, struct tide_err *err)
{
    struct node *node = cluster_find_node(&srv->cluster, node_id);
    if (!node)
        return 0;
    int rc = store_begin(srv->store, err);
    if (rc)
        return rc;
    char msg[TIDE_REASON_MAX + 64];
    bool drained = notes->probe != 0, failed = false;
    for (int i = 0; !rc && i < notes->nfaults; i++) {
        char times[24] = "";
        if (notes->faults[i].count > 1)
            snprintf(times, sizeof times, " (%d times)", notes->faults[i].count);
        snprintf(msg, sizeof msg, "GPU %d: %s%s%s", notes->faults[i].gpu_index,
                 notes->faults[i].fault, times,
                 notes->faults[i].bits & GPU_HEALTH_NEW ? "" : " (again)");
        log_warn("node %s: %s", node->name, msg);
        rc = store_event_add(srv->store, now_ms, "gpu_fault", 0, node_id, msg, err);
        drained |= (notes->faults[i].bits & (GPU_HEALTH_DRAINED | GPU_HEALTH_FAILED)) != 0;
        failed |= (notes->faults[i].bits & GPU_HEALTH_FAILED) != 0;
    }
    if (!rc && notes->nfaults)
        rc = store_gpu_faults_save(srv->store, node, err);
    if (!rc && drained)
        rc = store_node_set_drain(srv->store, node_id, node->state,
                                  node->drained ? node->drain_reason : NULL, err);
    if (!rc && drained) {
        const char *kind = failed ? "node_failed" : notes->probe < 0 ? "node_undrained"
                                                                     : "node_drained";
        snprintf(msg, sizeof msg, "%s", notes->probe < 0 ? "health probe passed" : node->drain_reason);
        log_warn("node %s: %s: %s", node->name, kind, msg);
        rc = store_event_add(srv->store, now_ms, kind, 0, node_id, msg, err);
    }
    if (!rc)
        rc = store_commit(srv->store, err);
    if (rc) {
        store_rollback(srv->store);
        /* the cache holds faults and drains the store refused, which the
         * agent will not report again: what is stored is what counts */
        server_resync_cluster(srv, now_ms);
        return rc;
    }
    if (notes->probe < 0)
        sched_loop_kick(srv);
    return 0;
}
