/*
 * Start-time ETA benchmark: the time of one eta_plan_run (core/eta.h), what
 * the server holds its lock for at most once a second, over a synthetic
 * cluster of N nodes of 8 GPUs, every GPU held by a running job (runtime
 * bounds mixed: est_runtime, max_runtime, none, learned per project) and
 * J pending jobs of mixed shapes in the order of a real pass; then the same
 * with every pending job asking for a GPU model (the plan's slower path,
 * which scans the nodes), and with the jobs spread over four queues with
 * caps on running jobs and GPUs (the plan keeps the caps). It reports; it
 * does not judge.
 *
 *   bench_eta [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/eta.h"
#include "core/sched.h"

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned next(unsigned *seed)
{
    *seed = *seed * 1103515245 + 12345;
    return *seed >> 8;
}

enum variant { PLAIN, MODEL, CAPPED };
static const char *const variant_names[] = {"-", "H200*", "capped"};

static void runtime_bound(struct job *job, unsigned *seed, enum variant v)
{
    switch (next(seed) % 4) {
    case 0:
        job->est_runtime_s = 60 + next(seed) % 36000;
        break;
    case 1:
        job->max_runtime_s = 60 + next(seed) % 86400;
        break;
    default:
        break; /* learned from its project */
    }
    snprintf(job->project, sizeof job->project, "p%u", next(seed) % 20);
    if (v == CAPPED)
        snprintf(job->queue, sizeof job->queue, "c%u", next(seed) % 4);
    else
        snprintf(job->queue, sizeof job->queue, "default");
}

/* The built-in queues and c0..c3, each capped a little above the running
 * jobs and GPUs it starts with (half the nodes' two jobs of 4 GPUs each, spread
 * over four queues). */
static void capped_queues(struct queue_set *qs, int nodes)
{
    queue_set_defaults(qs);
    for (int i = 0; i < 4; i++) {
        struct queue_config *q = &qs->queues[qs->count++];
        *q = qs->queues[0];
        snprintf(q->name, sizeof q->name, "c%d", i);
        q->max_running_jobs = nodes / 2 + nodes / 8;
        q->max_running_gpus = 3 * nodes;
    }
}

static int build(struct cluster *c, struct eta_estimator *est, int nodes, int jobs,
                 enum variant v, unsigned seed)
{
    cluster_init(c);
    for (int n = 0; n < nodes; n++) {
        struct node node;
        memset(&node, 0, sizeof node);
        node.id = n + 1;
        snprintf(node.name, sizeof node.name, "node-%d", n + 1);
        node.state = NODE_READY;
        node.ngpus = 8;
        for (int g = 0; g < 8; g++) {
            node.gpus[g].index = g;
            snprintf(node.gpus[g].name, sizeof node.gpus[g].name, "H200");
        }
        if (!cluster_put_node(c, &node))
            return -1;
    }
    int64_t id = 1;
    for (int n = 0; n < nodes; n++) /* two running jobs of 4 GPUs per node */
        for (int half = 0; half < 2; half++) {
            struct job job;
            memset(&job, 0, sizeof job);
            job.id = id++;
            job.gpus = 4;
            job.state = JOB_RUNNING;
            job.start_ms = (int64_t)(next(&seed) % 3600) * 1000;
            runtime_bound(&job, &seed, v);
            struct job *j = cluster_add_job(c, &job);
            int idx[4] = {half * 4, half * 4 + 1, half * 4 + 2, half * 4 + 3};
            if (!j)
                return -1;
            cluster_assign(c, j, cluster_find_node(c, n + 1), idx, 4);
        }
    static const int shapes[] = {1, 1, 1, 2, 2, 4, 8, 1};
    for (int k = 0; k < jobs; k++) {
        struct job job;
        memset(&job, 0, sizeof job);
        job.id = id++;
        job.gpus = shapes[next(&seed) % 8];
        job.priority = (int)(next(&seed) % 3);
        job.submit_ms = k;
        job.state = JOB_PENDING;
        runtime_bound(&job, &seed, v);
        if (v == MODEL)
            snprintf(job.gpu_model, sizeof job.gpu_model, "H200*");
        if (!cluster_add_job(c, &job))
            return -1;
    }
    eta_estimator_init(est, 0);
    for (int i = 0; i < 20 * ETA_SAMPLES; i++) {
        char p[16];
        snprintf(p, sizeof p, "p%d", i % 20);
        if (eta_estimator_observe(est, p, "default", (int64_t)(60 + next(&seed) % 20000) * 1000))
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && !strcmp(argv[1], "--quick");
    static const int sizes[][2] = {{100, 1000}, {100, 10000}, {1000, 10000}, {1000, 100000}};
    int nsizes = quick ? 2 : 4;
    printf("%-8s %-8s %-10s %-14s %-14s %s\n", "nodes", "pending", "jobs", "pass ms",
           "eta plan ms", "with ETA");
    static struct queue_set qs;
    for (int run = 0; run < 3 * nsizes; run++) {
        int s = run % nsizes;
        enum variant v = (enum variant)(run / nsizes);
        if (v == MODEL && sizes[s][1] > 10000 && quick)
            continue;
        struct cluster c;
        struct eta_estimator est;
        capped_queues(&qs, sizes[s][0]);
        if (build(&c, &est, sizes[s][0], sizes[s][1], v, 7) != 0) {
            fprintf(stderr, "bench_eta: out of memory\n");
            return 1;
        }
        struct sched_config cfg;
        sched_config_defaults(&cfg);
        if (v == CAPPED)
            cfg.queues = &qs;
        struct scheduler sch;
        sched_init(&sch, &cfg);
        struct action_list out;
        action_list_init(&out);
        double t0 = seconds_now();
        sched_pass(&sch, &c, 3600 * 1000, &out);
        double pass_ms = (seconds_now() - t0) * 1000;
        struct eta_plan plan;
        eta_plan_init(&plan);
        if (v == CAPPED)
            eta_plan_set_queues(&plan, &qs);
        double best = 1e9;
        for (int r = 0; r < 5; r++) {
            t0 = seconds_now();
            if (eta_plan_run(&plan, &c, &est, sch.order, sch.norder, 3600 * 1000) != 0) {
                fprintf(stderr, "bench_eta: out of memory\n");
                return 1;
            }
            double ms = (seconds_now() - t0) * 1000;
            best = ms < best ? ms : best;
        }
        size_t with = 0;
        for (size_t j = 0; j < c.njobs; j++)
            with += c.jobs[j].state == JOB_PENDING && c.jobs[j].eta_basis != ETA_BASIS_UNKNOWN;
        printf("%-8d %-8d %-10s %-14.1f %-14.2f %zu\n", sizes[s][0], sizes[s][1],
               variant_names[v], pass_ms, best, with);
        eta_plan_release(&plan);
        action_list_release(&out);
        sched_release(&sch);
        eta_estimator_release(&est);
        cluster_release(&c);
    }
    return 0;
}
