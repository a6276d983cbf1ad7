/*
 * Scheduler benchmark: one full pass of the real core over a synthetic
 * cluster (N nodes of 8 GPUs, J pending jobs of mixed shapes), reporting the
 * pass time and placements per second. It reports; it does not judge.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/sched.h"

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void build_cluster(struct cluster *c, int nodes, int jobs, unsigned seed)
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
            node.gpus[g].memory_total_mib = 144384;
            node.gpus[g].utilization_pct = (int)((seed = seed * 1103515245 + 12345) >> 16) % 50;
        }
        cluster_put_node(c, &node);
    }
    static const int shapes[] = {1, 1, 1, 2, 2, 4, 8, 0};
    for (int j = 0; j < jobs; j++) {
        struct job job;
        memset(&job, 0, sizeof job);
        job.id = j + 1;
        seed = seed * 1103515245 + 12345;
        job.gpus = shapes[(seed >> 16) % 8];
        job.priority = (int)((seed >> 8) % 3);
        job.submit_ms = j;
        job.state = JOB_PENDING;
        cluster_add_job(c, &job);
    }
}

int main(int argc, char **argv)
{
    int sizes[][2] = {{1000, 10000}, {1000, 100000}, {10000, 10000}, {10000, 100000}};
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    printf("%-10s %-10s %-10s %-10s %-12s %-14s\n", "nodes", "jobs", "placement", "placed",
           "pass_ms", "placements/s");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (quick && i > 0)
            break;
        struct cluster c;
        build_cluster(&c, sizes[i][0], sizes[i][1], 42);
        struct sched_config cfg;
        sched_config_defaults(&cfg);
        struct scheduler s;
        sched_init(&s, &cfg);
        struct action_list out;
        action_list_init(&out);
        double t0 = seconds_now();
        int placed = sched_pass(&s, &c, 0, &out);
        double dt = seconds_now() - t0;
        printf("%-10d %-10d %-10s %-10d %-12.1f %-14.0f\n", sizes[i][0], sizes[i][1],
               cfg.placement->name, placed, dt * 1000, placed / (dt > 0 ? dt : 1e-9));
        fflush(stdout);
        action_list_release(&out);
        sched_release(&s);
        cluster_release(&c);
    }
    return 0;
}
