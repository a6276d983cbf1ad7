/*
 * GET /metrics in the Prometheus text format (docs/metrics.md). Under the
 * server lock only a snapshot is taken: jobs counted by state and queue in
 * one pass over the unfinished jobs, node and GPU numbers copied, and the
 * pool section (its size bound by tide.yaml's pools and projects, not by
 * jobs) printed. Everything else is formatted after the lock is released.
 * Label values are validated identifiers (names of nodes, queues, pools,
 * projects) or GPU model names, which are escaped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "core/gang.h"
#include "server/pool_loop.h"
#include "server/server.h"

struct gpu_sample {
    char node[TIDE_NAME_MAX];
    char model[TIDE_NAME_MAX];
    int index;
    int utilization_pct, temperature_c, power_w;
    int64_t memory_used_mib, memory_total_mib;
    bool healthy;
};

/* Unfinished jobs by queue: count and GPUs asked for per state, and the
 * oldest pending job's submit time. */
struct active_jobs {
    int nqueues;
    char queues[METRICS_MAX_QUEUES][TIDE_NAME_MAX];
    long long count[METRICS_MAX_QUEUES][JOB_STATE_COUNT];
    long long gpus[METRICS_MAX_QUEUES][JOB_STATE_COUNT];
    int64_t oldest_pending_ms[METRICS_MAX_QUEUES]; /* 0: none pending */
};

struct snapshot {
    int64_t now_ms;
    struct metrics_counts counts;
    struct active_jobs jobs;
    int nodes_by_state[NODE_STATE_COUNT];
    int gpus_total, gpus_allocated, gpus_fragmented;
    struct gpu_sample *gpus;
    size_t ngpus;
    long long http_requests, http_connections, sched_passes, jobs_submitted, store_syncs, log_syncs;
    long long failures[FAILURE_CLASS_COUNT];
    long long gpu_faults[GPU_FAULT_KIND_COUNT];
    char *pool_text; /* the pool section, already formatted */
    size_t pool_len;
};

static int queue_row(struct active_jobs *a, const char *queue)
{
    for (int i = 0; i < a->nqueues; i++)
        if (!strcmp(a->queues[i], queue))
            return i;
    if (a->nqueues == METRICS_MAX_QUEUES - 1) {
        snprintf(a->queues[a->nqueues], TIDE_NAME_MAX, METRICS_OTHER_QUEUE);
        return a->nqueues++;
    }
    if (a->nqueues == METRICS_MAX_QUEUES)
        return METRICS_MAX_QUEUES - 1;
    snprintf(a->queues[a->nqueues], TIDE_NAME_MAX, "%s", queue);
    return a->nqueues++;
}

/* Caller holds srv->lock. Every configured queue gets a row, so that a
 * queue with no jobs reads 0 rather than nothing. */
static int take_snapshot(struct server *srv, struct snapshot *s)
{
    const struct cluster *c = &srv->cluster;
    s->now_ms = clock_now_ms();
    for (int q = 0; q < srv->cfg.queues.count; q++)
        queue_row(&s->jobs, srv->cfg.queues.queues[q].name);
    int last = -1, smallest_waiting = 0; /* cluster_smallest_waiting_gpus, in the same pass */
    for (size_t i = 0; i < c->njobs; i++) {
        const struct job *job = &c->jobs[i];
        int q = last >= 0 && !strcmp(s->jobs.queues[last], job->queue)
                    ? last
                    : queue_row(&s->jobs, job->queue);
        last = q;
        if ((int)job->state < 0 || job->state >= JOB_STATE_COUNT)
            continue;
        s->jobs.count[q][job->state]++;
        s->jobs.gpus[q][job->state] += job->gpus; /* a gang's too: its total */
        /* one held back on purpose (a hold, dependencies) is not a stuck
         * queue nor what fragmentation keeps waiting */
        if (job->state != JOB_PENDING || job->held || job->on_hold)
            continue;
        if (!s->jobs.oldest_pending_ms[q] || job->submit_ms < s->jobs.oldest_pending_ms[q])
            s->jobs.oldest_pending_ms[q] = job->submit_ms;
        int share = job->gpus; /* what it needs of one node: a gang's smallest split */
        for (int m = job->max_nodes > 1 ? gang_next_split(job, 1) : 0; m; m = gang_next_split(job, m))
            share = job->gpus / m;
        if (share > 0 && (!smallest_waiting || share < smallest_waiting))
            smallest_waiting = share;
    }
    size_t ngpus = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        s->nodes_by_state[c->nodes[i].state]++;
        ngpus += (size_t)c->nodes[i].ngpus;
    }
    s->gpus = ngpus ? calloc(ngpus, sizeof *s->gpus) : NULL;
    if (ngpus && !s->gpus)
        return TIDE_ENOMEM;
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct node *n = &c->nodes[i];
        if (!node_state_is_up(n->state))
            continue; /* telemetry of a node that is gone is stale */
        for (int g = 0; g < n->ngpus; g++) {
            struct gpu_sample *out = &s->gpus[s->ngpus++];
            const struct gpu *gpu = &n->gpus[g];
            memcpy(out->node, n->name, sizeof out->node);
            memcpy(out->model, gpu->name, sizeof out->model);
            out->index = gpu->index;
            out->utilization_pct = gpu->utilization_pct;
            out->temperature_c = gpu->temperature_c;
            out->power_w = gpu->power_w;
            out->memory_used_mib = gpu->memory_used_mib;
            out->memory_total_mib = gpu->memory_total_mib;
            out->healthy = !gpu->faulty;
        }
    }
    s->gpus_total = cluster_gpus_total(c);
    s->gpus_allocated = cluster_gpus_allocated(c);
    s->gpus_fragmented = cluster_fragmented_gpus(c, smallest_waiting);
    s->http_requests = __atomic_load_n(&srv->http_requests, __ATOMIC_RELAXED);
    s->store_syncs = (long long)store_sync_count(srv->store);
    s->log_syncs = __atomic_load_n(&srv->log_syncs, __ATOMIC_RELAXED);
    s->http_connections = __atomic_load_n(&srv->http_connections, __ATOMIC_RELAXED);
    s->sched_passes = srv->sched_passes;
    s->jobs_submitted = srv->jobs_submitted;
    memcpy(s->failures, srv->failures, sizeof s->failures);
    memcpy(s->gpu_faults, srv->gpu_faults, sizeof s->gpu_faults);
    FILE *pool_out = open_memstream(&s->pool_text, &s->pool_len);
    if (!pool_out)
        return TIDE_ENOMEM;
    pool_loop_metrics(srv, pool_out);
    return fclose(pool_out) == 0 ? 0 : TIDE_ENOMEM;
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newlines escaped as the text format asks. */
static void print_escaped(FILE *out, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', out);
        if (*v == '\n')
            fputs("\\n", out);
        else
            fputc(*v, out);
    }
}

/* One histogram's series; labels is "" or `name="value"`. */
static void print_histogram(FILE *out, const char *name, const char *labels,
                            const struct histogram *h)
{
    const char *sep = *labels ? "," : "";
    for (int i = 0; i <= h->nbounds; i++) {
        fprintf(out, "%s_bucket{%s%sle=\"", name, labels, sep);
        if (i < h->nbounds)
            fprintf(out, "%g", h->bounds[i]); /* as written: "0.1", not 0.10000000000000001 */
        else
            fputs("+Inf", out);
        fprintf(out, "\"} %llu\n", (unsigned long long)histogram_cumulative(h, i));
    }
    const char *lbrace = *labels ? "{" : "", *rbrace = *labels ? "}" : "";
    fprintf(out, "%s_sum%s%s%s %.17g\n", name, lbrace, labels, rbrace, h->sum);
    fprintf(out, "%s_count%s%s%s %llu\n", name, lbrace, labels, rbrace,
            (unsigned long long)h->count);
}

static void print_jobs(FILE *out, const struct snapshot *s)
{
    const struct active_jobs *a = &s->jobs;
    family(out, "tide_jobs", "gauge", "Unfinished jobs by state and queue.");
    for (int q = 0; q < a->nqueues; q++)
        for (int st = 0; st < JOB_STATE_COUNT; st++)
            if (!job_state_is_final((enum job_state)st))
                fprintf(out, "tide_jobs{state=\"%s\",queue=\"%s\"} %lld\n",
                        job_state_name((enum job_state)st), a->queues[q], a->count[q][st]);
    family(out, "tide_job_gpus", "gauge", "GPUs asked for by unfinished jobs, by state and queue.");
    for (int q = 0; q < a->nqueues; q++)
        for (int st = 0; st < JOB_STATE_COUNT; st++)
            if (!job_state_is_final((enum job_state)st))
                fprintf(out, "tide_job_gpus{state=\"%s\",queue=\"%s\"} %lld\n",
                        job_state_name((enum job_state)st), a->queues[q], a->gpus[q][st]);
    family(out, "tide_queue_oldest_pending_seconds", "gauge",
           "How long the oldest pending job of the queue has waited; 0 when none waits.");
    for (int q = 0; q < a->nqueues; q++)
        fprintf(out, "tide_queue_oldest_pending_seconds{queue=\"%s\"} %.3f\n", a->queues[q],
                a->oldest_pending_ms[q] && s->now_ms > a->oldest_pending_ms[q]
                    ? (double)(s->now_ms - a->oldest_pending_ms[q]) / 1000.0
                    : 0.0);
    const struct metrics_counts *c = &s->counts;
    family(out, "tide_jobs_finished_total", "counter",
           "Jobs that reached a final state since the server started, by state and queue.");
    for (int q = 0; q < c->nqueues; q++)
        for (int st = 0; st < JOB_STATE_COUNT; st++)
            if (job_state_is_final((enum job_state)st))
                fprintf(out, "tide_jobs_finished_total{state=\"%s\",queue=\"%s\"} %lld\n",
                        job_state_name((enum job_state)st), c->queues[q], c->finished[q][st]);
    family(out, "tide_job_wait_seconds", "histogram",
           "Time from submit to the first start of a job, observed at the start, by queue.");
    for (int q = 0; q < c->nqueues; q++) {
        char labels[TIDE_NAME_MAX + 16];
        snprintf(labels, sizeof labels, "queue=\"%s\"", c->queues[q]);
        print_histogram(out, "tide_job_wait_seconds", labels, &c->wait_seconds[q]);
    }
}

static void print_gpus(FILE *out, const struct snapshot *s)
{
    static const struct {
        const char *name, *help;
    } gauges[] = {
        {"tide_gpu_utilization_ratio", "GPU utilisation reported by the agent (0 to 1)."},
        {"tide_gpu_memory_used_bytes", "GPU memory in use reported by the agent."},
        {"tide_gpu_memory_total_bytes", "GPU memory in all."},
        {"tide_gpu_temperature_celsius", "GPU temperature reported by the agent."},
        {"tide_gpu_power_watts", "GPU power draw reported by the agent."},
        {"tide_gpu_healthy", "1 while the GPU may get work, 0 after a fault until cleared."},
    };
    for (size_t k = 0; k < sizeof gauges / sizeof gauges[0]; k++) {
        family(out, gauges[k].name, "gauge", gauges[k].help);
        for (size_t i = 0; i < s->ngpus; i++) {
            const struct gpu_sample *g = &s->gpus[i];
            fprintf(out, "%s{node=\"%s\",gpu=\"%d\",model=\"", gauges[k].name, g->node, g->index);
            print_escaped(out, g->model);
            fputs("\"} ", out);
            switch (k) {
            case 0:
                fprintf(out, "%.2f\n", g->utilization_pct / 100.0);
                break;
            case 1:
                fprintf(out, "%lld\n", (long long)g->memory_used_mib * 1048576LL);
                break;
            case 2:
                fprintf(out, "%lld\n", (long long)g->memory_total_mib * 1048576LL);
                break;
            case 3:
                fprintf(out, "%d\n", g->temperature_c);
                break;
            case 5:
                fprintf(out, "%d\n", g->healthy);
                break;
            default:
                fprintf(out, "%d\n", g->power_w);
                break;
            }
        }
    }
}

static void print_rest(FILE *out, const struct snapshot *s)
{
    family(out, "tide_nodes", "gauge", "Nodes by state.");
    for (int st = 0; st < NODE_STATE_COUNT; st++)
        fprintf(out, "tide_nodes{state=\"%s\"} %d\n", node_state_name((enum node_state)st),
                s->nodes_by_state[st]);
    family(out, "tide_gpus", "gauge", "GPUs on ready nodes.");
    fprintf(out, "tide_gpus %d\n", s->gpus_total);
    family(out, "tide_gpus_allocated", "gauge", "GPUs held by tide tasks on ready nodes.");
    fprintf(out, "tide_gpus_allocated %d\n", s->gpus_allocated);
    family(out, "tide_gpus_fragmented", "gauge",
           "Free GPUs on ready nodes too few for the smallest waiting job.");
    fprintf(out, "tide_gpus_fragmented %d\n", s->gpus_fragmented);
    family(out, "tide_metrics_snapshot_seconds", "histogram",
           "How long each GET /metrics held the server lock to take its snapshot.");
    print_histogram(out, "tide_metrics_snapshot_seconds", "", &s->counts.snapshot_seconds);
    family(out, "tide_http_requests_total", "counter", "HTTP requests served.");
    fprintf(out, "tide_http_requests_total %lld\n", s->http_requests);
    family(out, "tide_http_connections_total", "counter",
           "HTTP connections accepted (a kept connection carries many requests).");
    fprintf(out, "tide_http_connections_total %lld\n", s->http_connections);
    family(out, "tide_store_syncs_total", "counter",
           "Disk flushes of the database's commits (0 on PostgreSQL).");
    fprintf(out, "tide_store_syncs_total %lld\n", s->store_syncs);
    family(out, "tide_log_syncs_total", "counter",
           "Flushes of a finished task's log before its last bytes were acknowledged.");
    fprintf(out, "tide_log_syncs_total %lld\n", s->log_syncs);
    family(out, "tide_scheduler_passes_total", "counter", "Scheduling passes run.");
    fprintf(out, "tide_scheduler_passes_total %lld\n", s->sched_passes);
    family(out, "tide_scheduler_pass_seconds", "histogram",
           "Duration of one scheduling pass (the server lock is held throughout).");
    print_histogram(out, "tide_scheduler_pass_seconds", "", &s->counts.pass_seconds);
    family(out, "tide_jobs_submitted_total", "counter", "Jobs accepted since start.");
    fprintf(out, "tide_jobs_submitted_total %lld\n", s->jobs_submitted);
    family(out, "tide_submit_seconds", "histogram",
           "POST /v1/jobs answered 201: from the request's arrival to the reply, the job durable.");
    print_histogram(out, "tide_submit_seconds", "", &s->counts.submit_seconds);
    family(out, "tide_job_failures_total", "counter",
           "Attempts that ended other than in success, by cause.");
    for (int k = 0; k < FAILURE_CLASS_COUNT; k++)
        fprintf(out, "tide_job_failures_total{reason=\"%s\"} %lld\n", failure_class_names[k],
                s->failures[k]);
    family(out, "tide_gpu_faults_total", "counter",
           "GPU faults agents reported since start, by kind (docs/health.md).");
    for (int k = 0; k < GPU_FAULT_KIND_COUNT; k++)
        fprintf(out, "tide_gpu_faults_total{kind=\"%s\"} %lld\n", gpu_fault_kind_names[k],
                s->gpu_faults[k]);
    family(out, "tide_image_cache_hits_total", "counter",
           "Containerised attempts placed on a node that already held their image.");
    fprintf(out, "tide_image_cache_hits_total %lld\n", s->counts.image_cache_hits);
    family(out, "tide_image_cache_misses_total", "counter",
           "Containerised attempts placed on a node that had to pull their image.");
    fprintf(out, "tide_image_cache_misses_total %lld\n", s->counts.image_cache_misses);
}

int api_metrics(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    if (req->token.kind != TOKEN_ADMIN && req->token.kind != TOKEN_METRICS)
        return api_error_msg(reply, TIDE_EPERM, NULL,
                             "/metrics covers every project: it needs a metrics token "
                             "(tide token create --metrics) or the admin token");
    struct snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    metrics_copy(&srv->metrics, &s->counts);
    pthread_mutex_lock(&srv->lock);
    double locked_at = metrics_now_s();
    int rc = take_snapshot(srv, s);
    double held_s = metrics_now_s() - locked_at;
    pthread_mutex_unlock(&srv->lock);
    metrics_observe_snapshot(&srv->metrics, held_s); /* shows from the next scrape on */

    char *text = NULL;
    size_t len = 0;
    FILE *out = rc ? NULL : open_memstream(&text, &len);
    if (out) {
        print_jobs(out, s);
        print_rest(out, s);
        print_gpus(out, s);
        if (s->pool_len)
            fwrite(s->pool_text, 1, s->pool_len, out);
        rc = fclose(out) == 0 ? 0 : TIDE_ENOMEM;
    } else {
        rc = TIDE_ENOMEM;
    }
    free(s->gpus);
    free(s->pool_text);
    free(s);
    if (rc) {
        free(text);
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    }
    reply->text = text;
    reply->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 0;
}
