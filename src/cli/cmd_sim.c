/*
 * `tide sim`: reads a trace (or makes a synthetic one), replays it through
 * the real scheduler core on a virtual clock (src/sim/) and writes the
 * report: a table on stdout, report.json, timeline.csv and report.html in
 * --out. --compare runs several configs on the same trace side by side.
 * Timings and progress go to stderr, never into report.json.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "cli/yaml_json.h"
#include "common/fsutil.h"
#include "core/order.h"
#include "core/placement.h"
#include "sim/sim.h"
#include "sim/trace.h"

static const char sim_usage[] =
    "usage: tide sim (--trace FILE --format F | --synthetic N) [options]\n"
    "\n"
    "Replays a job trace through tide's own scheduler (the same core as the\n"
    "server) on a virtual clock and reports JCT, waits, utilisation,\n"
    "fragmentation, preemptions, cost, budget alerts and holds, and (elastic\n"
    "pools) spot interruptions and provider failures.\n"
    "\n"
    "Trace:\n"
    "  --trace FILE           trace file to read\n"
    "  --format F             philly | itp | alibaba | helios | csv (docs/sim.md)\n"
    "  --max-jobs N           use only the first N jobs (by submit time)\n"
    "  --synthetic N          generate N jobs instead of reading a trace\n"
    "  --seed S               seed of the synthetic trace and of the run's random\n"
    "                         draws: spot interruptions, provider failures (default 1)\n"
    "  --arrival-rate R       synthetic arrivals per hour (default: 70% load)\n"
    "  --size-mix MIX         synthetic GPU counts, GPUS:WEIGHT,... (1:70,2:10,4:10,8:10)\n"
    "  --min-duration S       synthetic shortest job, seconds (60)\n"
    "  --max-duration S       synthetic longest job, seconds (86400)\n"
    "Cluster and policy (flags override --config):\n"
    "  --config FILE          tide.yaml: scheduler, pools, projects (budgets) and a\n"
    "                         sim: section (seed, preempt, ...); see docs/sim.md\n"
    "  --nodes N              one pool of N nodes (default 8)\n"
    "  --gpus-per-node G      GPUs per node (default 8)\n"
    "  --gpu-model M          GPU model name (default V100)\n"
    "  --gpu-memory MIB       memory per GPU (default 32768)\n"
    "  --price P              on-demand price per GPU-hour (default 2.48)\n"
    "  --policy P             order policy: fifo | priority | sjf | las | fifo_strict |\n"
    "                         sjf_strict (default fifo; with --config or --compare\n"
    "                         the server's: priority)\n"
    "  --placement S          placement strategy (default loadaware; with --config or\n"
    "                         --compare the server's: binpack)\n"
    "  --backfill[=BOOL]      EASY backfill behind the first blocked job (default\n"
    "                         off; with --config or --compare the server's: on)\n"
    "  --preempt[=BOOL]       requeue running jobs a waiting job outranks\n"
    "                         (default: on for las, off otherwise)\n"
    "  --preempt-interval S   re-check for preemption while jobs wait (60)\n"
    "  --preempt-overhead S   run time a preempted job loses on restart (0)\n"
    "  --no-oracle            do not give jobs their trace duration as estimate\n"
    "  --eta[=BOOL]           score start-time ETAs: each job's ETA at arrival against\n"
    "                         its real start (report.json \"eta\"; slower: it plans\n"
    "                         the whole queue at each arrival)\n"
    "Output:\n"
    "  --out DIR              write report.json, timeline.csv, report.html and\n"
    "                         (single runs) jobs.csv: each job's first start and node\n"
    "  --compare A.yaml B.yaml ...  run each config (on top of the flags) on the\n"
    "                         same trace and print them side by side\n"
    "  --json                 print report.json to stdout instead of the table\n"
    "  --quiet                no progress or timings on stderr\n"
    "  -h, --help             this help\n";

struct sim_cli {
    const char *trace_path, *format, *config_path, *out_dir;
    long synthetic, max_jobs;
    struct trace_synth_params synth;
    bool arrival_given, seed_given;
    const char *compare[32];
    int ncompare;
    bool json, quiet;
    /* flags over the config */
    const char *policy, *placement, *gpu_model, *price;
    long nodes, gpus_per_node, gpu_memory, preempt_interval, preempt_overhead;
    int backfill, preempt, no_oracle, eta; /* -1: not given */
};

struct warn_ctx {
    long shown;
    bool quiet;
};

static void on_warn(void *ctx, const char *path, long line, const char *reason)
{
    struct warn_ctx *w = ctx;
    if (w->quiet)
        return;
    if (w->shown < 20)
        fprintf(stderr, "tide sim: %s:%ld: skipped row: %s\n", path, line, reason);
    else if (w->shown == 20)
        fprintf(stderr, "tide sim: (further skipped rows are only counted)\n");
    w->shown++;
}

static void on_progress(void *ctx, size_t done, size_t total, int64_t now_ms)
{
    int64_t *last = ctx;
    int64_t now = clock_mono_ms();
    if (done < total && now - *last < 1000)
        return;
    *last = now;
    fprintf(stderr, "tide sim: %zu/%zu jobs done, virtual time %.1f h\n", done, total,
            (double)now_ms / 3600000.0);
}

static int load_config_file(struct sim_config *cfg, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    if (fs_read_file(path, 1 << 20, &text, &len) != 0) {
        fprintf(stderr, "tide sim: cannot read config %s: %s\n", path, strerror(errno));
        return -1;
    }
    json_t *root = NULL;
    struct tide_err err = {0};
    int rc = cli_yaml_config_to_json(text, len, path, &root, &err);
    free(text);
    if (rc == 0) {
        /* The file's base name labels the run unless it sets `name`. */
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        snprintf(cfg->name, sizeof cfg->name, "%.*s", (int)strcspn(base, "."), base);
        rc = sim_config_from_json(cfg, root, &err);
        if (rc)
            fprintf(stderr, "tide sim: %s: %s\n", path, err.message); /* it names the key */
    } else
        fprintf(stderr, "tide sim: %s\n", err.message);
    json_decref(root);
    return rc ? -1 : 0;
}

static int apply_flags(struct sim_config *cfg, const struct sim_cli *o)
{
    if (o->policy)
        snprintf(cfg->policy, sizeof cfg->policy, "%s", o->policy);
    if (o->placement)
        snprintf(cfg->placement, sizeof cfg->placement, "%s", o->placement);
    if (o->backfill >= 0)
        cfg->backfill = o->backfill;
    if (o->no_oracle > 0)
        cfg->oracle_runtime = false;
    if (o->eta >= 0)
        cfg->eta = o->eta;
    if (o->preempt_interval > 0)
        cfg->preempt_interval_ms = o->preempt_interval * 1000;
    if (o->preempt_overhead >= 0)
        cfg->preempt_overhead_ms = o->preempt_overhead * 1000;
    if (o->seed_given)
        cfg->seed = o->synth.seed;
    bool pool_flag = o->nodes >= 0 || o->gpus_per_node >= 0 || o->gpu_model || o->gpu_memory >= 0 || o->price;
    if (pool_flag) {
        if (cfg->npools != 1) {
            fprintf(stderr, "tide sim: --nodes/--gpus-per-node/--gpu-model/--gpu-memory/--price "
                            "describe one pool; the config has %d\n", cfg->npools);
            return -1;
        }
        struct sim_pool *p = &cfg->pools[0];
        /* An elastic pool's size is min/max_nodes, and its own
         * price_per_node_hour overrides the GPU price: refuse, not ignore. */
        if (p->elastic && (o->nodes >= 0 || (o->price && p->price_per_node_hour_set))) {
            fprintf(stderr,
                    "tide sim: %s is for a fixed-size pool, and pool %s is elastic: set "
                    "its %s in the config\n",
                    o->nodes >= 0 ? "--nodes" : "--price", p->name,
                    o->nodes >= 0 ? "max_nodes (and min_nodes)" : "price_per_node_hour");
            return -1;
        }
        if (o->nodes >= 0)
            p->nodes = (int)o->nodes;
        if (o->gpus_per_node >= 0)
            p->gpus_per_node = (int)o->gpus_per_node;
        if (o->gpu_model)
            snprintf(p->gpu_model, sizeof p->gpu_model, "%s", o->gpu_model);
        if (o->gpu_memory >= 0)
            p->gpu_memory_mib = o->gpu_memory;
        if (o->price && sim_parse_price_micros(o->price, &p->price_per_gpu_hour_micros) != 0) {
            fprintf(stderr, "tide sim: --price: '%s' is not a price like 2.48\n", o->price);
            return -1;
        }
    }
    return 0;
}

/* Preemption follows the policy unless set: LAS is preemptive (Tiresias). */
static void settle_preempt(struct sim_config *cfg, int flag, bool set_in_file)
{
    if (flag >= 0)
        cfg->preempt = flag;
    else if (!set_in_file)
        cfg->preempt = !strcmp(cfg->policy, "las");
}

enum {
    OPT_TRACE = 1, OPT_FORMAT, OPT_CONFIG, OPT_OUT, OPT_POLICY, OPT_PLACEMENT, OPT_GPU_MODEL,
    OPT_PRICE, OPT_JSON, OPT_QUIET, OPT_BACKFILL, OPT_PREEMPT, OPT_NO_ORACLE, OPT_SYNTHETIC,
    OPT_MAX_JOBS, OPT_NODES, OPT_GPUS_PER_NODE, OPT_GPU_MEMORY, OPT_PREEMPT_INTERVAL,
    OPT_PREEMPT_OVERHEAD, OPT_SEED, OPT_MIN_DURATION, OPT_MAX_DURATION, OPT_ARRIVAL_RATE,
    OPT_SIZE_MIX, OPT_COMPARE, OPT_ETA,
};

static const struct cli_opt sim_opts[] = {
    {"--trace", CLI_OPT_VALUE, OPT_TRACE},
    {"--format", CLI_OPT_VALUE, OPT_FORMAT},
    {"--config", CLI_OPT_VALUE, OPT_CONFIG},
    {"--out", CLI_OPT_VALUE, OPT_OUT},
    {"--policy", CLI_OPT_VALUE, OPT_POLICY},
    {"--placement", CLI_OPT_VALUE, OPT_PLACEMENT},
    {"--gpu-model", CLI_OPT_VALUE, OPT_GPU_MODEL},
    {"--price", CLI_OPT_VALUE, OPT_PRICE},
    {"--json", CLI_OPT_FLAG, OPT_JSON},
    {"--quiet", CLI_OPT_FLAG, OPT_QUIET},
    {"--backfill", CLI_OPT_OPTIONAL, OPT_BACKFILL},
    {"--preempt", CLI_OPT_OPTIONAL, OPT_PREEMPT},
    {"--no-oracle", CLI_OPT_FLAG, OPT_NO_ORACLE},
    {"--eta", CLI_OPT_OPTIONAL, OPT_ETA},
    {"--synthetic", CLI_OPT_VALUE, OPT_SYNTHETIC},
    {"--max-jobs", CLI_OPT_VALUE, OPT_MAX_JOBS},
    {"--nodes", CLI_OPT_VALUE, OPT_NODES},
    {"--gpus-per-node", CLI_OPT_VALUE, OPT_GPUS_PER_NODE},
    {"--gpu-memory", CLI_OPT_VALUE, OPT_GPU_MEMORY},
    {"--preempt-interval", CLI_OPT_VALUE, OPT_PREEMPT_INTERVAL},
    {"--preempt-overhead", CLI_OPT_VALUE, OPT_PREEMPT_OVERHEAD},
    {"--seed", CLI_OPT_VALUE, OPT_SEED},
    {"--min-duration", CLI_OPT_VALUE, OPT_MIN_DURATION},
    {"--max-duration", CLI_OPT_VALUE, OPT_MAX_DURATION},
    {"--arrival-rate", CLI_OPT_VALUE, OPT_ARRIVAL_RATE},
    {"--size-mix", CLI_OPT_VALUE, OPT_SIZE_MIX},
    {"--compare", CLI_OPT_FLAG, OPT_COMPARE},
    {"--help", CLI_OPT_FLAG, CLI_ID_HELP},
    {"-h", CLI_OPT_FLAG, CLI_ID_HELP},
    {NULL, 0, 0},
};

/* A whole number flag within [lo, hi] into *out (a long). */
static int range_flag(const char *flag, const char *v, long long lo, long long hi, long *out,
                      struct tide_err *err)
{
    long long n;
    if (cli_parse_range(flag, v, lo, hi, &n, err))
        return TIDE_EINVAL;
    *out = (long)n;
    return 0;
}

/* The option named id in sim_opts, for messages. */
static const char *opt_name(int id)
{
    for (const struct cli_opt *o = sim_opts; o->name; o++)
        if (o->id == id)
            return o->name;
    return "?";
}

/* One option with its value. */
static int sim_option(struct sim_cli *o, int id, const char *v, struct tide_err *err)
{
    const char *flag = opt_name(id);
    long n;
    int b;
    switch (id) {
    case OPT_TRACE: o->trace_path = v; return 0;
    case OPT_FORMAT: o->format = v; return 0;
    case OPT_CONFIG: o->config_path = v; return 0;
    case OPT_OUT: o->out_dir = v; return 0;
    case OPT_POLICY: o->policy = v; return 0;
    case OPT_PLACEMENT: o->placement = v; return 0;
    case OPT_GPU_MODEL: o->gpu_model = v; return 0;
    case OPT_PRICE: o->price = v; return 0;
    case OPT_JSON: o->json = true; return 0;
    case OPT_QUIET: o->quiet = true; return 0;
    case OPT_NO_ORACLE: o->no_oracle = 1; return 0;
    case OPT_BACKFILL:
    case OPT_PREEMPT:
    case OPT_ETA:
        if (cli_parse_bool(flag, v, &b, err))
            return TIDE_EINVAL;
        *(id == OPT_BACKFILL ? &o->backfill : id == OPT_PREEMPT ? &o->preempt : &o->eta) = b;
        return 0;
    case OPT_SYNTHETIC: return range_flag(flag, v, 1, 100000000, &o->synthetic, err);
    case OPT_MAX_JOBS: return range_flag(flag, v, 1, 1000000000, &o->max_jobs, err);
    case OPT_NODES: return range_flag(flag, v, 0, 10000000, &o->nodes, err);
    case OPT_GPUS_PER_NODE: return range_flag(flag, v, 0, 64, &o->gpus_per_node, err);
    case OPT_GPU_MEMORY: return range_flag(flag, v, 0, 1LL << 40, &o->gpu_memory, err);
    case OPT_PREEMPT_INTERVAL: return range_flag(flag, v, 1, 31536000, &o->preempt_interval, err);
    case OPT_PREEMPT_OVERHEAD: return range_flag(flag, v, 0, 31536000, &o->preempt_overhead, err);
    case OPT_SEED:
        if (range_flag(flag, v, 0, LONG_MAX, &n, err))
            return TIDE_EINVAL;
        o->synth.seed = (uint64_t)n;
        o->seed_given = true;
        return 0;
    case OPT_MIN_DURATION:
    case OPT_MAX_DURATION:
        if (range_flag(flag, v, 1, 31536000, &n, err))
            return TIDE_EINVAL;
        *(id == OPT_MIN_DURATION ? &o->synth.min_duration_s : &o->synth.max_duration_s) = n;
        return 0;
    case OPT_ARRIVAL_RATE: {
        char *end;
        double r = strtod(v, &end);
        if (!*v || *end || !(r > 0) || !isfinite(r))
            return tide_err_set(err, TIDE_EINVAL, "arrival-rate",
                                "--arrival-rate: '%s' is not a positive number of jobs per hour",
                                v);
        o->synth.arrivals_per_hour = r;
        o->arrival_given = true;
        return 0;
    }
    case OPT_SIZE_MIX: return trace_synth_parse_mix(&o->synth, v, err);
    }
    return 0;
}

/* A synthetic trace's arrivals must fall within the traces' 100 years
 * (TRACE_MAX_TIME_MS): a rate too low for its jobs is refused, naming the
 * lowest that fits. given: the rate is --arrival-rate's, not the default. */
static int synth_rate_fits(const struct trace_synth_params *p, bool given, struct tide_err *err)
{
    double min = trace_synth_min_rate(p);
    if (p->arrivals_per_hour >= min)
        return 0;
    double years = (double)(p->njobs - 1) / p->arrivals_per_hour / (24 * 365.25);
    return tide_err_set(err, TIDE_EINVAL, "arrival-rate",
                        "--arrival-rate: %s%.3g jobs per hour would spread %ld jobs over about "
                        "%.3g years, and arrivals must fall within %d years: give at least %.3g "
                        "(or fewer jobs)",
                        given ? "" : "the default for this cluster, ", p->arrivals_per_hour,
                        p->njobs, years, TRACE_MAX_YEARS, min);
}

/* Reads argv into o. Returns 0, 1 for --help, or TIDE_EINVAL with err. */
static int parse_args(int argc, char **argv, struct sim_cli *o, struct tide_err *err)
{
    memset(o, 0, sizeof *o);
    trace_synth_defaults(&o->synth);
    o->nodes = o->gpus_per_node = o->gpu_memory = o->preempt_overhead = -1;
    o->backfill = o->preempt = o->no_oracle = o->eta = -1;
    struct cli_args a;
    const char *v;
    int id, r;
    bool help = false, comparing = false, compare_given = false;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, sim_opts, &id, &v, err)) != CLI_ARGS_END) {
        if (r < 0)
            return r;
        if (r == CLI_ARGS_POSITIONAL) {
            /* --compare A.yaml B.yaml ...: the files up to the next option */
            if (!comparing)
                return tide_err_set(err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
            if (o->ncompare == 32)
                return tide_err_set(err, TIDE_EINVAL, "compare",
                                    "--compare takes at most 32 configs");
            o->compare[o->ncompare++] = v;
            continue;
        }
        comparing = id == OPT_COMPARE;
        compare_given |= comparing;
        if (id == CLI_ID_HELP)
            help = true;
        else if (sim_option(o, id, v, err))
            return TIDE_EINVAL;
    }
    if (compare_given && o->ncompare == 0)
        return tide_err_set(err, TIDE_EINVAL, "compare", "--compare needs one or more config files");
    if (a.next < argc)
        return tide_err_set(err, TIDE_EINVAL, NULL, "unexpected argument '%s'", argv[a.next]);
    if (help)
        return 1;
    if (!o->trace_path == !o->synthetic)
        return tide_err_set(err, TIDE_EINVAL, NULL,
                            "give either --trace FILE --format F or --synthetic N");
    if (o->trace_path && !o->format)
        return tide_err_set(err, TIDE_EINVAL, "format", "--trace needs --format (%s)",
                            trace_reader_names());
    o->synth.njobs = o->synthetic;
    if (o->synthetic && o->arrival_given && synth_rate_fits(&o->synth, true, err))
        return TIDE_EINVAL;
    return 0;
}

static bool file_sets_preempt(const char *path)
{
    /* Whether a YAML config says sim.preempt itself (else the policy decides). */
    char *text = NULL;
    size_t len = 0;
    if (!path || fs_read_file(path, 1 << 20, &text, &len) != 0)
        return false;
    json_t *root = NULL;
    bool set = cli_yaml_config_to_json(text, len, path, &root, NULL) == 0 &&
               json_object_get(json_object_get(root, "sim"), "preempt");
    json_decref(root);
    free(text);
    return set;
}

static int write_text(const char *path, int (*fn)(FILE *, json_t *const *, size_t),
                      json_t *const *reports, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tide sim: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = fn(f, reports, n);
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "tide sim: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

static int timeline_one(FILE *f, json_t *const *reports, size_t n)
{
    (void)n;
    return sim_report_timeline_csv(f, reports[0]);
}

/* DIR/jobs.csv: when and where each job first started (single runs). */
static int write_jobs_csv(const char *dir, const struct sim_result *res, size_t njobs)
{
    char path[4096];
    if (fs_mkdir_p(dir, 0755) != 0) {
        fprintf(stderr, "tide sim: cannot create %s: %s\n", dir, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/jobs.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tide sim: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = sim_report_jobs_csv(f, res, njobs);
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "tide sim: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

static int write_outputs(const struct sim_cli *o, json_t *const *reports, size_t n)
{
    if (fs_mkdir_p(o->out_dir, 0755) != 0) {
        fprintf(stderr, "tide sim: cannot create %s: %s\n", o->out_dir, strerror(errno));
        return -1;
    }
    char path[4096];
    json_t *doc = n == 1 ? json_incref(reports[0]) : json_pack("{s:i}", "tide_sim_compare", 1);
    if (n > 1) {
        json_t *runs = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append(runs, reports[i]);
        json_object_set_new(doc, "runs", runs);
    }
    char *text = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    json_decref(doc);
    if (!text)
        return -1;
    snprintf(path, sizeof path, "%s/report.json", o->out_dir);
    size_t len = strlen(text);
    text[len] = '\0';
    int rc = fs_write_file_atomic(path, text, len, 0644);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "tide sim: cannot write %s\n", path);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (n == 1)
            snprintf(path, sizeof path, "%s/timeline.csv", o->out_dir);
        else
            snprintf(path, sizeof path, "%s/timeline-%zu-%s.csv", o->out_dir, i + 1,
                     json_string_value(json_object_get(json_object_get(reports[i], "config"), "name")));
        if (write_text(path, timeline_one, &reports[i], 1))
            return -1;
    }
    snprintf(path, sizeof path, "%s/report.html", o->out_dir);
    return write_text(path, sim_report_html, reports, n);
}

int cli_sim_main(int argc, char **argv)
{
    struct sim_cli o;
    struct tide_err perr = {0};
    int prc = parse_args(argc, argv, &o, &perr);
    if (prc == 1) {
        fputs(sim_usage, stdout);
        return 0;
    }
    if (prc < 0)
        return cli_usage_fail("sim", &perr);

    struct sim_config base;
    sim_config_defaults(&base);
    if (o.config_path || o.ncompare)
        sim_config_server_scheduler(&base); /* the files are tide.yaml files */
    if (o.config_path && load_config_file(&base, o.config_path))
        return 2;
    if (apply_flags(&base, &o))
        return 2;

    int64_t t0 = clock_mono_ms();
    struct trace trace;
    trace_init(&trace);
    struct warn_ctx wctx = {.quiet = o.quiet};
    trace.warn = on_warn;
    trace.warn_ctx = &wctx;
    struct tide_err err = {0};
    char label[512];
    if (o.synthetic) {
        if (!o.arrival_given) {
            o.synth.arrivals_per_hour = sim_synth_default_rate(&base, &o.synth);
            if (synth_rate_fits(&o.synth, false, &err))
                return cli_input_fail("sim", &err);
        }
        int rc = trace_synth_generate(&trace, &o.synth);
        if (rc == TIDE_ETOOBIG) {
            fprintf(stderr,
                    "tide sim: --arrival-rate: at %.3g jobs per hour, arrivals of the %ld "
                    "jobs drawn from seed %llu pass %d years: give a higher rate (or "
                    "fewer jobs)\n",
                    o.synth.arrivals_per_hour, o.synthetic, (unsigned long long)o.synth.seed,
                    TRACE_MAX_YEARS);
            trace_release(&trace);
            return 2;
        }
        if (rc) {
            fprintf(stderr, "tide sim: out of memory generating %ld jobs\n", o.synthetic);
            trace_release(&trace);
            return 1;
        }
        /* The rate used, in digits that show it however small. */
        char rate[32];
        snprintf(rate, sizeof rate, o.synth.arrivals_per_hour >= 0.001 ? "%.3f" : "%.3g",
                 o.synth.arrivals_per_hour);
        snprintf(label, sizeof label, "synthetic: %ld jobs, seed %llu, %s arrivals/h", o.synthetic,
                 (unsigned long long)o.synth.seed, rate);
    } else {
        const struct trace_reader_ops *ops = trace_reader_by_name(o.format);
        if (!ops) {
            fprintf(stderr, "tide sim: --format: unknown format '%s' (known: %s)\n", o.format,
                    trace_reader_names());
            return 2;
        }
        if (trace_load(&trace, ops, o.trace_path, &err)) {
            fprintf(stderr, "tide sim: %s\n", err.message);
            trace_release(&trace);
            return 1;
        }
        const char *base_name = strrchr(o.trace_path, '/') ? strrchr(o.trace_path, '/') + 1 : o.trace_path;
        snprintf(label, sizeof label, "%s (%s)", base_name, ops->name);
    }
    if (o.max_jobs > 0 && (size_t)o.max_jobs < trace.njobs)
        trace.njobs = (size_t)o.max_jobs;
    if (!o.quiet) {
        fprintf(stderr, "tide sim: trace %s: %ld rows read, %zu jobs kept, %ld dropped (%.2f s)\n",
                label, trace.rows_read, trace.njobs, trace.rows_dropped,
                (double)(clock_mono_ms() - t0) / 1000.0);
        for (int i = 0; i < trace.ndrops; i++)
            fprintf(stderr, "tide sim:   dropped %ld: %s (first at line %ld)\n", trace.drops[i].count,
                    trace.drops[i].reason, trace.drops[i].first_line);
    }

    size_t nruns = o.ncompare ? (size_t)o.ncompare : 1;
    json_t *reports[32] = {0};
    int status = 0;
    bool base_sets_preempt = file_sets_preempt(o.config_path);
    for (size_t r = 0; r < nruns && status == 0; r++) {
        struct sim_config cfg = base;
        bool sets_preempt = base_sets_preempt;
        if (o.ncompare) {
            if (load_config_file(&cfg, o.compare[r])) {
                status = 2;
                break;
            }
            sets_preempt |= file_sets_preempt(o.compare[r]);
        }
        settle_preempt(&cfg, o.preempt, sets_preempt);
        if (sim_config_validate(&cfg, &err)) {
            fprintf(stderr, "tide sim: %s%s%s\n", o.ncompare ? o.compare[r] : "",
                    o.ncompare ? ": " : "", err.message);
            status = 2;
            break;
        }
        int64_t last = 0, t1 = clock_mono_ms();
        struct sim_hooks hooks = {.progress = o.quiet ? NULL : on_progress, .ctx = &last};
        struct sim_result res;
        if (sim_run(&cfg, &trace, &hooks, &res, &err)) {
            fprintf(stderr, "tide sim: %s\n", err.message);
            status = 1;
            break;
        }
        if (!o.quiet)
            fprintf(stderr, "tide sim: %s: simulated %zu jobs in %.2f s (%ld passes, %ld event batches)\n",
                    cfg.name, trace.njobs, (double)(clock_mono_ms() - t1) / 1000.0, res.passes,
                    res.batches);
        reports[r] = sim_report_json(&cfg, &trace, label, &res);
        if (o.out_dir && nruns == 1 && write_jobs_csv(o.out_dir, &res, trace.njobs) != 0)
            status = 1;
        sim_result_release(&res);
        if (!reports[r]) {
            fprintf(stderr, "tide sim: out of memory building the report\n");
            status = 1;
        }
    }
    if (status == 0) {
        if (o.json) {
            json_t *doc = reports[0];
            if (nruns > 1) {
                doc = json_pack("{s:i, s:[]}", "tide_sim_compare", 1, "runs");
                for (size_t i = 0; i < nruns; i++)
                    json_array_append(json_object_get(doc, "runs"), reports[i]);
            } else
                json_incref(doc);
            json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
            fputc('\n', stdout);
            json_decref(doc);
        } else if (nruns > 1)
            sim_report_compare(stdout, reports, nruns);
        else
            sim_report_table(stdout, reports[0]);
        if (o.out_dir && write_outputs(&o, reports, nruns))
            status = 1;
        if (!o.quiet)
            fprintf(stderr, "tide sim: total %.2f s\n", (double)(clock_mono_ms() - t0) / 1000.0);
    }
    for (size_t i = 0; i < nruns; i++)
        json_decref(reports[i]);
    trace_release(&trace);
    return status;
}
