/*
 * Scheduler benchmark: one full pass of the real core over a synthetic
 * cluster (N nodes of 8 GPUs, J pending jobs of mixed shapes) for each
 * placement strategy, reporting the pass time, placements per second and
 * the GPUs left fragmented, then the time of a second pass over what is
 * left waiting (nothing changed in between: the steady state of a busy
 * queue, which a server or the simulator passes over again and again).
 * It reports; it does not judge. By default the
 * pass orders and places only; --full also runs backfill and preemption as
 * sched_config_defaults has them (their cost is theirs, not placement's).
 * --deep adds the deep-queue rows: every GPU held by running jobs and J
 * jobs waiting that cannot start, one pass explaining each wait (the
 * server) and one not (the simulator), after a first pass that sorted them
 * (with --full, backfill and preemption on, as the server has them; with
 * --model, every waiting job names its GPU model, so each goes to placement
 * and is explained rather than passed over as the shape of an earlier one).
 *
 *   bench_sched [--quick] [--full] [--deep] [--model] [--json FILE] [--only STRATEGY]
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

static int build_cluster(struct cluster *c, int nodes, int jobs, unsigned seed)
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
        if (!cluster_put_node(c, &node))
            return -1;
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
        if (!cluster_add_job(c, &job))
            return -1;
    }
    return 0;
}

/* Every GPU of every node held by one running 8-GPU job. */
static int fill_cluster(struct cluster *c, int nodes)
{
    for (int n = 0; n < nodes; n++) {
        struct job job;
        memset(&job, 0, sizeof job);
        job.id = 10000000 + n;
        job.gpus = 8;
        job.state = JOB_RUNNING;
        struct job *added = cluster_add_job(c, &job);
        if (!added)
            return -1;
        int idx[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        cluster_assign(c, added, &c->nodes[n], idx, 8);
    }
    return 0;
}

static void deep_queue_rows(const char *only, int full, int model)
{
    static const int sizes[][2] = {{1000, 10000}, {1000, 100000}, {10000, 100000}};
    printf("\n%-8s %-8s %-11s %-9s %-17s %s\n", "nodes", "waiting", "placement", "placed",
           "pass_ms(explain)", "pass_ms(quiet)");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const char *strategy = only ? only : "loadaware";
        struct cluster c;
        if (build_cluster(&c, sizes[i][0], sizes[i][1], 42) != 0 ||
            fill_cluster(&c, sizes[i][0]) != 0) {
            fprintf(stderr, "bench_sched: out of memory\n");
            exit(1);
        }
        for (size_t j = 0; j < c.njobs; j++)
            if (c.jobs[j].gpus == 0)
                c.jobs[j].gpus = 1; /* every waiting job needs a GPU: none can start */
        if (model) /* each job then goes to placement: no shape stands for another */
            for (size_t j = 0; j < c.njobs; j++)
                if (c.jobs[j].state == JOB_PENDING)
                    snprintf(c.jobs[j].gpu_model, sizeof c.jobs[j].gpu_model, "H200");
        double ms[2] = {0, 0};
        int placed = 0;
        for (int quiet = 0; quiet < 2; quiet++) {
            struct sched_config cfg;
            sched_config_defaults(&cfg);
            cfg.placement = placement_by_name(strategy);
            if (!full)
                cfg.backfill = cfg.preemption = false;
            cfg.explain = !quiet;
            struct scheduler s;
            sched_init(&s, &cfg);
            struct action_list out;
            action_list_init(&out);
            placed += sched_pass(&s, &c, 0, &out); /* sorts them once */
            action_list_clear(&out);
            double t0 = seconds_now();
            placed += sched_pass(&s, &c, 1, &out);
            ms[quiet] = (seconds_now() - t0) * 1000;
            action_list_release(&out);
            sched_release(&s);
        }
        printf("%-8d %-8d %-11s %-9d %-17.1f %.1f\n", sizes[i][0], sizes[i][1], strategy, placed,
               ms[0], ms[1]);
        fflush(stdout);
        cluster_release(&c);
    }
}

struct result {
    int nodes, jobs, placed, fragmented, full;
    const char *placement;
    double pass_ms, per_s, again_ms;
};

int main(int argc, char **argv)
{
    static const int sizes[][2] = {{1000, 10000}, {1000, 100000}, {10000, 10000}, {10000, 100000}};
    static const char *const strategies[] = {"binpack", "spread", "roundrobin", "loadaware"};
    int quick = 0, full = 0, deep = 0, model = 0;
    const char *json = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--full"))
            full = 1;
        else if (!strcmp(argv[i], "--deep"))
            deep = 1;
        else if (!strcmp(argv[i], "--model"))
            model = 1;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: bench_sched [--quick] [--full] [--deep] [--model] [--json FILE] "
                   "[--only STRATEGY]\n"
                   "One scheduling pass per strategy over synthetic clusters (N nodes of 8\n"
                   "GPUs, J pending jobs of mixed shapes): pass time, placements per second,\n"
                   "GPUs left fragmented, and a second pass over what still waits.\n"
                   "  --quick     only the first size (1000 nodes x 10000 jobs)\n"
                   "  --full      with backfill and preemption, as the server runs\n"
                   "  --deep      add the deep-queue rows (every GPU held, J jobs waiting)\n"
                   "  --model     deep rows: every waiting job names its GPU model\n"
                   "  --json FILE also write the pass rows to FILE\n"
                   "  --only S    one strategy (%s)\n",
                   placement_names());
            return 0;
        } else {
            fprintf(stderr, "usage: bench_sched [--quick] [--full] [--deep] [--model] [--json FILE] "
                            "[--only STRATEGY]\n");
            return 2;
        }
    }
    if (only && !placement_by_name(only)) {
        fprintf(stderr, "bench_sched: --only: unknown strategy '%s' (known: %s)\n", only,
                placement_names());
        return 2;
    }
    struct result results[64];
    size_t nresults = 0;
    printf("%-8s %-8s %-11s %-8s %-11s %-13s %-16s %s\n", "nodes", "jobs", "placement", "placed",
           "pass_ms", "placements/s", "fragmented_gpus", "again_ms");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (quick && i > 0)
            break;
        for (size_t k = 0; k < sizeof strategies / sizeof strategies[0]; k++) {
            if (only && strcmp(only, strategies[k]))
                continue;
            struct cluster c;
            if (build_cluster(&c, sizes[i][0], sizes[i][1], 42) != 0) {
                fprintf(stderr, "bench_sched: out of memory\n");
                return 1;
            }
            struct sched_config cfg;
            sched_config_defaults(&cfg);
            cfg.placement = placement_by_name(strategies[k]);
            if (!full)
                cfg.backfill = cfg.preemption = false;
            struct scheduler s;
            sched_init(&s, &cfg);
            struct action_list out;
            action_list_init(&out);
            double t0 = seconds_now();
            int placed = sched_pass(&s, &c, 0, &out);
            double dt = seconds_now() - t0;
            struct result r = {sizes[i][0], sizes[i][1], placed,
                               cluster_fragmented_gpus(&c, cluster_smallest_waiting_gpus(&c)),
                               full, strategies[k], dt * 1000, placed / (dt > 0 ? dt : 1e-9), 0};
            action_list_clear(&out);
            t0 = seconds_now();
            if (placed >= 0 && sched_pass(&s, &c, 1, &out) < 0) {
                fprintf(stderr, "bench_sched: out of memory\n");
                return 1;
            }
            r.again_ms = (seconds_now() - t0) * 1000;
            printf("%-8d %-8d %-11s %-8d %-11.1f %-13.0f %-16d %.1f\n", r.nodes, r.jobs,
                   r.placement, r.placed, r.pass_ms, r.per_s, r.fragmented, r.again_ms);
            fflush(stdout);
            if (nresults < sizeof results / sizeof results[0])
                results[nresults++] = r;
            action_list_release(&out);
            sched_release(&s);
            cluster_release(&c);
        }
    }
    if (deep)
        deep_queue_rows(only, full, model);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\"sched_pass\": [\n");
        for (size_t i = 0; i < nresults; i++)
            fprintf(f,
                    "  {\"nodes\": %d, \"gpus_per_node\": 8, \"jobs\": %d, \"placement\": \"%s\", "
                    "\"placed\": %d, \"pass_ms\": %.3f, \"placements_per_s\": %.0f, "
                    "\"fragmented_gpus\": %d, \"second_pass_ms\": %.3f, "
                    "\"backfill_and_preemption\": %s}%s\n",
                    results[i].nodes, results[i].jobs, results[i].placement, results[i].placed,
                    results[i].pass_ms, results[i].per_s, results[i].fragmented,
                    results[i].again_ms, results[i].full ? "true" : "false",
                    i + 1 < nresults ? "," : "");
        fprintf(f, "]}\n");
        if (fclose(f) != 0) {
            perror(json);
            return 1;
        }
    }
    return 0;
}
