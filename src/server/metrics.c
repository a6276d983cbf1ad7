/*
 * GET /metrics in the Prometheus text format: jobs by state and queue,
 * nodes by state, GPUs total and allocated, per-GPU telemetry and a few
 * counters. Label values here are validated identifiers, so they need no
 * escaping.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/pool_loop.h"
#include "server/server.h"

static void print_job_count(const char *state, const char *queue, long long n, void *ctx)
{
    fprintf((FILE *)ctx, "tide_jobs{state=\"%s\",queue=\"%s\"} %lld\n", state, queue, n);
}

int api_metrics(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    (void)req;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    struct tide_err err;
    pthread_mutex_lock(&srv->lock);
    fprintf(out, "# HELP tide_jobs Jobs by state and queue.\n# TYPE tide_jobs gauge\n");
    int rc = store_jobs_count(srv->store, print_job_count, out, &err);

    int nodes_by_state[NODE_STATE_COUNT] = {0};
    for (size_t i = 0; i < srv->cluster.nnodes; i++)
        nodes_by_state[srv->cluster.nodes[i].state]++;
    fprintf(out, "# HELP tide_nodes Nodes by state.\n# TYPE tide_nodes gauge\n");
    for (int s = 0; s < NODE_STATE_COUNT; s++)
        fprintf(out, "tide_nodes{state=\"%s\"} %d\n", node_state_name((enum node_state)s),
                nodes_by_state[s]);
    fprintf(out, "# HELP tide_gpus_total GPUs on ready nodes.\n# TYPE tide_gpus_total gauge\n"
                 "tide_gpus_total %d\n", cluster_gpus_total(&srv->cluster));
    fprintf(out, "# HELP tide_gpus_allocated GPUs held by tide tasks on ready nodes.\n"
                 "# TYPE tide_gpus_allocated gauge\ntide_gpus_allocated %d\n",
            cluster_gpus_allocated(&srv->cluster));
    fprintf(out, "# HELP tide_gpus_fragmented Free GPUs on ready nodes too few for the smallest "
                 "waiting job.\n# TYPE tide_gpus_fragmented gauge\ntide_gpus_fragmented %d\n",
            cluster_fragmented_gpus(&srv->cluster, cluster_smallest_waiting_gpus(&srv->cluster)));

    static const struct {
        const char *name, *help;
    } gauges[] = {{"tide_gpu_utilization_pct", "GPU utilisation reported by the agent."},
                  {"tide_gpu_memory_used_mib", "GPU memory in use reported by the agent."},
                  {"tide_gpu_temperature_celsius", "GPU temperature."},
                  {"tide_gpu_power_watts", "GPU power draw."}};
    for (size_t k = 0; k < sizeof gauges / sizeof gauges[0]; k++) {
        fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", gauges[k].name, gauges[k].help, gauges[k].name);
        for (size_t i = 0; i < srv->cluster.nnodes; i++) {
            const struct node *n = &srv->cluster.nodes[i];
            for (int g = 0; g < n->ngpus; g++) {
                const struct gpu *gpu = &n->gpus[g];
                long long v = k == 0 ? gpu->utilization_pct : k == 1 ? gpu->memory_used_mib
                              : k == 2 ? gpu->temperature_c : gpu->power_w;
                fprintf(out, "%s{node=\"%s\",gpu=\"%d\"} %lld\n", gauges[k].name, n->name,
                        gpu->index, v);
            }
        }
    }
    fprintf(out, "# HELP tide_http_requests_total HTTP requests served.\n"
                 "# TYPE tide_http_requests_total counter\ntide_http_requests_total %lld\n",
            __atomic_load_n(&srv->http_requests, __ATOMIC_RELAXED));
    fprintf(out, "# HELP tide_scheduler_passes_total Scheduling passes run.\n"
                 "# TYPE tide_scheduler_passes_total counter\ntide_scheduler_passes_total %lld\n",
            srv->sched_passes);
    fprintf(out, "# HELP tide_jobs_submitted_total Jobs accepted since start.\n"
                 "# TYPE tide_jobs_submitted_total counter\ntide_jobs_submitted_total %lld\n",
            srv->jobs_submitted);
    fprintf(out, "# HELP tide_job_failures_total Attempts that ended other than in success, by cause.\n"
                 "# TYPE tide_job_failures_total counter\n");
    for (int k = 0; k < FAILURE_CLASS_COUNT; k++)
        fprintf(out, "tide_job_failures_total{reason=\"%s\"} %lld\n", failure_class_names[k],
                srv->failures[k]);
    pool_loop_metrics(srv, out);
    pthread_mutex_unlock(&srv->lock);
    if (fclose(out) != 0 || rc) {
        free(text);
        return rc ? api_error(reply, &err) : api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    }
    reply->text = text;
    reply->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 0;
}
