/* `tide nodes`: nodes and their GPUs as a table, one line per node or, with
 * --gpus, one line per GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "cli/table.h"

static const char nodes_usage[] =
    "usage: tide nodes [--gpus] [--state S] [--pool P] [--all] [--json] [--server URL] [--token T]\n"
    "       tide nodes drain NAME [--reason TEXT]  (no new work; what runs finishes)\n"
    "       tide nodes undrain NAME                (takes work again; clears GPU faults)\n"
    "       tide nodes delete NAME [--force]       (forget the node; --force requeues\n"
    "                                               its jobs, using no retry)\n"
    "       tide nodes interrupt ID   (spot: the node is reclaimed; its jobs checkpoint\n"
    "                                  and are requeued)\n"
    "\n"
    "Lists nodes: their GPUs (4xH200), how many are allocated to jobs, average\n"
    "utilisation, memory in use and when the node last reported. Released pool\n"
    "nodes are left out unless --all (or --state released) is given.\n"
    "  --gpus          one line per GPU: utilisation, memory, temperature, power, job\n"
    "  --state S       only nodes in state S: ready, draining, drained (draining\n"
    "                  and empty), stopping (its agent is), lost, provisioning,\n"
    "                  released, failed\n"
    "  --pool P        only nodes of pool P (\"-\" for nodes joined by hand)\n"
    "  --all           include released nodes\n"
    "drain, undrain, delete and interrupt need the admin token. drain and delete\n"
    "are for nodes joined by hand (a pool's autoscaler manages its own). A deleted\n"
    "node whose agent still runs registers again: stop the agent first.\n";

enum { OPT_GPUS = 1, OPT_STATE, OPT_POOL, OPT_ALL, OPT_REASON, OPT_FORCE };

static const struct cli_opt nodes_opts[] = {
    {"--gpus", CLI_OPT_FLAG, OPT_GPUS},
    {"--state", CLI_OPT_VALUE, OPT_STATE},
    {"--pool", CLI_OPT_VALUE, OPT_POOL},
    {"--all", CLI_OPT_FLAG, OPT_ALL},
    {"--reason", CLI_OPT_VALUE, OPT_REASON},
    {"--force", CLI_OPT_FLAG, OPT_FORCE},
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};

/* Which nodes a listing shows. */
struct node_filter {
    const char *state; /* NULL: any */
    const char *pool;  /* NULL: any; "-": none */
    int all;           /* include released nodes */
};

/* The state a person reads: "drained" for a drained node nothing runs on. */
static const char *shown_state(json_t *node)
{
    const char *state = cli_json_text(json_object_get(node, "state"), "?");
    if (!strcmp(state, "draining") && json_is_string(json_object_get(node, "drain_reason")) &&
        json_integer_value(json_object_get(node, "jobs")) == 0)
        return "drained";
    return state;
}

static int node_shown(json_t *node, const struct node_filter *f)
{
    const char *state = cli_json_text(json_object_get(node, "state"), "?");
    if (f->state && strcmp(f->state, state) && strcmp(f->state, shown_state(node)))
        return 0;
    if (!f->state && !f->all && !strcmp(state, "released"))
        return 0;
    if (f->pool) {
        const char *pool = json_string_value(json_object_get(node, "pool"));
        if (!strcmp(f->pool, "-") ? pool != NULL : (!pool || strcmp(pool, f->pool)))
            return 0;
    }
    return 1;
}

static const char *short_gpu_name(json_t *gpu)
{
    const char *name = cli_json_text(json_object_get(gpu, "name"), "GPU");
    return strncmp(name, "NVIDIA ", 7) == 0 ? name + 7 : name;
}

/* "4xH200", or "2xH200+1xA100" for a mixed node, or "-" for none. */
static void gpu_shape(json_t *gpus, char *buf, size_t size)
{
    size_t used = 0, i = 0, n = json_array_size(gpus);
    buf[0] = '\0';
    while (i < n && used < size) {
        const char *name = short_gpu_name(json_array_get(gpus, i));
        size_t run = 1;
        while (i + run < n && !strcmp(short_gpu_name(json_array_get(gpus, i + run)), name))
            run++;
        int w = snprintf(buf + used, size - used, "%s%zux%s", used ? "+" : "", run, name);
        if (w < 0)
            break;
        used += (size_t)w;
        i += run;
    }
    if (!buf[0])
        snprintf(buf, size, "-");
}

/* "20/564G": used in the unit of the total, so the pair reads at a glance. */
static void mem_pair(double used, double total, char *buf, size_t size)
{
    if (total >= 1024)
        snprintf(buf, size, "%.0f/%.0fG", used / 1024, total / 1024);
    else
        snprintf(buf, size, "%.0f/%.0fM", used, total);
}

/* "ok", the health drain's reason, or the first faulty GPU and how many. */
static void node_health(json_t *node, char *buf, size_t size)
{
    const char *reason = json_string_value(json_object_get(node, "drain_reason"));
    if (reason && (!strncmp(reason, "gpu fault: ", 11) || !strncmp(reason, "health probe", 12))) {
        snprintf(buf, size, "%s", reason);
        return;
    }
    size_t i, faulty = 0;
    json_t *g;
    char first[96] = "";
    json_array_foreach(json_object_get(node, "gpus"), i, g)
    {
        if (!json_is_false(json_object_get(g, "healthy")))
            continue;
        if (!faulty++)
            snprintf(first, sizeof first, "GPU %.0f: %s",
                     cli_json_number(json_object_get(g, "index"), (double)i),
                     cli_json_text(json_object_get(g, "fault"), "fault"));
    }
    if (faulty > 1)
        snprintf(buf, size, "%s (+%zu more)", first, faulty - 1);
    else
        snprintf(buf, size, "%s", faulty ? first : "ok");
}

static int add_node_row(struct cli_table *t, json_t *node, double now)
{
    json_t *gpus = json_object_get(node, "gpus");
    size_t n = json_array_size(gpus), busy = 0, i;
    double util = 0, mem_used = 0, mem_total = 0;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        if (!json_is_null(json_object_get(g, "job_id")) && json_object_get(g, "job_id"))
            busy++;
        util += cli_json_number(json_object_get(g, "utilization_pct"), 0);
        mem_used += cli_json_number(json_object_get(g, "memory_used_mib"), 0);
        mem_total += cli_json_number(json_object_get(g, "memory_total_mib"), 0);
    }
    char shape[128], alloc[32], util_s[16] = "-", mem[48], seen[24] = "-";
    gpu_shape(gpus, shape, sizeof shape);
    /* the server counts physical GPUs: shares and MIG instances are parts of one */
    if (json_is_integer(json_object_get(node, "gpus_allocated")))
        busy = (size_t)json_integer_value(json_object_get(node, "gpus_allocated"));
    size_t whole = json_is_integer(json_object_get(node, "gpus_total"))
                       ? (size_t)json_integer_value(json_object_get(node, "gpus_total"))
                       : n;
    snprintf(alloc, sizeof alloc, "%zu/%zu", busy, whole);
    if (n)
        snprintf(util_s, sizeof util_s, "%.0f%%", util / (double)n);
    mem_pair(mem_used, mem_total, mem, sizeof mem);
    json_t *hb = json_object_get(node, "last_heartbeat");
    if (json_is_number(hb)) {
        cli_fmt_duration(now - json_number_value(hb), seen, sizeof seen - 4);
        strcat(seen, " ago");
    }
    char age[24] = "-", cost[32] = "-", idle[24] = "-", health[200];
    node_health(node, health, sizeof health);
    json_t *age_j = json_object_get(node, "age_s"), *idle_j = json_object_get(node, "idle_s");
    if (json_is_number(age_j))
        cli_fmt_duration(json_number_value(age_j), age, sizeof age);
    if (json_is_integer(json_object_get(node, "cost_micros")))
        snprintf(cost, sizeof cost, "%.4f",
                 (double)json_integer_value(json_object_get(node, "cost_micros")) / 1e6);
    if (json_is_number(idle_j) && json_number_value(idle_j) > 0)
        cli_fmt_duration(json_number_value(idle_j), idle, sizeof idle);
    const char *cells[] = {cli_json_text(json_object_get(node, "name"), NULL),
                           shown_state(node),
                           cli_json_text(json_object_get(node, "pool"), NULL),
                           shape,
                           alloc,
                           util_s,
                           n ? mem : NULL,
                           age,
                           cost,
                           idle,
                           seen,
                           health};
    return cli_table_add(t, cells);
}

static int add_gpu_rows(struct cli_table *t, json_t *node)
{
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(node, "gpus"), i, g)
    {
        char idx[16], util[16], mem[48], temp[16], power[16], job[24] = "-";
        snprintf(idx, sizeof idx, "%.0f", cli_json_number(json_object_get(g, "index"), (double)i));
        snprintf(util, sizeof util, "%.0f%%",
                 cli_json_number(json_object_get(g, "utilization_pct"), 0));
        mem_pair(cli_json_number(json_object_get(g, "memory_used_mib"), 0),
                 cli_json_number(json_object_get(g, "memory_total_mib"), 0), mem, sizeof mem);
        snprintf(temp, sizeof temp, "%.0fC", cli_json_number(json_object_get(g, "temperature_c"), 0));
        snprintf(power, sizeof power, "%.0fW", cli_json_number(json_object_get(g, "power_w"), 0));
        json_t *jid = json_object_get(g, "job_id");
        double shares = cli_json_number(json_object_get(g, "shared_jobs"), 0);
        if (json_is_number(jid))
            snprintf(job, sizeof job, "%.0f", json_number_value(jid));
        else if (shares > 0)
            snprintf(job, sizeof job, "%.0f shares %.0fM", shares,
                     cli_json_number(json_object_get(g, "shared_memory_mib"), 0));
        else if (json_is_true(json_object_get(g, "mig_mode")))
            snprintf(job, sizeof job, "MIG mode");
        char health[64] = "ok";
        if (json_is_false(json_object_get(g, "healthy")))
            snprintf(health, sizeof health, "%s", cli_json_text(json_object_get(g, "fault"), "fault"));
        const char *profile = json_string_value(json_object_get(g, "mig_profile"));
        if (profile) /* an instance: GPU shows "parent:index" */
            snprintf(idx, sizeof idx, "%.0f:%.0f",
                     cli_json_number(json_object_get(g, "parent_index"), -1),
                     cli_json_number(json_object_get(g, "index"), (double)i));
        const char *cells[] = {cli_json_text(json_object_get(node, "name"), NULL),
                               idx,
                               short_gpu_name(g),
                               util,
                               mem,
                               temp,
                               power,
                               job,
                               health};
        if (cli_table_add(t, cells) != 0)
            return 1;
    }
    return 0;
}

static int print_nodes(json_t *root, int per_gpu, const struct node_filter *filter)
{
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes)) {
        fprintf(stderr, "tide nodes: the server's answer has no \"nodes\" list\n");
        return 1;
    }
    static const char *const node_headers[] = {"NAME", "STATE", "POOL", "GPUS", "ALLOC", "UTIL",
                                               "MEM",  "AGE",   "COST", "IDLE", "LAST-SEEN",
                                               "HEALTH"};
    static const char *const gpu_headers[] = {"NODE", "GPU",   "NAME",  "UTIL", "MEM",
                                              "TEMP", "POWER", "JOB",   "HEALTH"};
    struct cli_table *t = per_gpu ? cli_table_create(9, gpu_headers)
                                  : cli_table_create(12, node_headers);
    if (!t)
        return 1;
    double now = cli_now();
    int rc = 0;
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node)
    {
        if (!node_shown(node, filter))
            continue;
        if ((per_gpu ? add_gpu_rows(t, node) : add_node_row(t, node, now)) != 0)
            rc = 1;
    }
    if (rc == 0)
        rc = cli_table_print(t, stdout);
    cli_table_destroy(t);
    if (rc)
        fprintf(stderr, "tide nodes: out of memory or cannot write output\n");
    return rc;
}

/* Keeps the nodes the filter shows in root's "nodes" (for --json). */
static void filter_nodes(json_t *root, const struct node_filter *f)
{
    json_t *nodes = json_object_get(root, "nodes");
    for (size_t i = json_array_size(nodes); i-- > 0;)
        if (!node_shown(json_array_get(nodes, i), f))
            json_array_remove(nodes, i);
}

/* drain / undrain / delete NAME. */
static int operate(struct cli_client *c, const char *verb, const char *name, const char *reason,
                   int force)
{
    struct tide_err err = {0};
    char *body = NULL;
    if (reason) {
        json_t *o = json_pack("{s:s}", "reason", reason);
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
    }
    const char *pairs[] = {"force", force ? "1" : NULL, NULL};
    char base[128];
    if (!strcmp(verb, "delete"))
        snprintf(base, sizeof base, "/v1/nodes/%s", name);
    else
        snprintf(base, sizeof base, "/v1/nodes/%s/%s", name, verb);
    char *path = cli_path_with_query(base, pairs);
    if (!path || (reason && !body)) {
        free(path);
        free(body);
        tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
        return cli_fail("nodes", &err);
    }
    const char *method = !strcmp(verb, "delete") ? "DELETE" : "POST";
    json_t *root = NULL;
    int rc = 0;
    if (c->json)
        rc = cli_request_and_print(c, method, path, body, &err) < 0 ? cli_fail("nodes", &err) : 0;
    else if (cli_client_request_json(c, method, path, body, &root, &err) < 0)
        rc = cli_fail("nodes", &err);
    else if (!strcmp(verb, "delete"))
        printf("node %s deleted (%lld job(s) requeued)\n", name,
               (long long)json_integer_value(json_object_get(root, "jobs_requeued")));
    else if (!strcmp(verb, "drain"))
        printf("node %s draining: %lld job(s) still running (%s)\n", name,
               (long long)json_integer_value(json_object_get(root, "jobs")),
               cli_json_text(json_object_get(root, "drain_reason"), "-"));
    else
        printf("node %s %s\n", name, cli_json_text(json_object_get(root, "state"), "?"));
    json_decref(root);
    free(path);
    free(body);
    return rc;
}

int cli_nodes_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    struct node_filter filter = {0};
    const char *v, *reason = NULL;
    int per_gpu = 0, force = 0, id, r, npos = 0;
    const char *pos[2] = {NULL, NULL};
    static const char *const verbs[] = {"interrupt", "drain", "undrain", "delete"};
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, nodes_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            return cli_usage_fail("nodes", &err);
        if (r == CLI_ARGS_POSITIONAL) {
            int verb = 0;
            for (size_t k = 0; k < sizeof verbs / sizeof verbs[0]; k++)
                verb |= !strcmp(v, verbs[k]);
            if (npos < 2 && (npos == 1 || verb)) {
                pos[npos++] = v;
                continue;
            }
            tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
            return cli_usage_fail("nodes", &err);
        }
        if (id == OPT_GPUS)
            per_gpu = 1;
        else if (id == OPT_STATE)
            filter.state = v;
        else if (id == OPT_POOL)
            filter.pool = v;
        else if (id == OPT_ALL)
            filter.all = 1;
        else if (id == OPT_REASON)
            reason = v;
        else if (id == OPT_FORCE)
            force = 1;
        else
            cli_common_apply(&co, id, v);
    }
    if (co.help) {
        fputs(nodes_usage, stdout);
        return 0;
    }
    static const char *const states[] = {"ready", "draining", "drained", "stopping", "lost",
                                         "provisioning", "released", "failed"};
    int known = !filter.state;
    for (size_t k = 0; k < sizeof states / sizeof states[0] && !known; k++)
        known = !strcmp(filter.state, states[k]);
    if (!known) {
        tide_err_set(&err, TIDE_EINVAL, "--state",
                     "--state: '%s' is not one of ready, draining, drained, stopping, lost, "
                     "provisioning, released, failed",
                     filter.state);
        return cli_usage_fail("nodes", &err);
    }
    if (npos == 1) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "%s needs a node %s", pos[0],
                     !strcmp(pos[0], "interrupt") ? "id" : "name");
        return cli_usage_fail("nodes", &err);
    }
    int interrupt = npos && !strcmp(pos[0], "interrupt");
    if ((reason && (!npos || strcmp(pos[0], "drain"))) || (force && (!npos || strcmp(pos[0], "delete")))) {
        tide_err_set(&err, TIDE_EINVAL, reason ? "--reason" : "--force", "%s goes with %s only",
                     reason ? "--reason" : "--force", reason ? "drain" : "delete");
        return cli_usage_fail("nodes", &err);
    }
    char *end = NULL;
    long long node_id = interrupt ? strtoll(pos[1], &end, 10) : 0;
    if (interrupt && (node_id <= 0 || *end)) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "interrupt needs a node id, got '%s'", pos[1]);
        return cli_usage_fail("nodes", &err);
    }
    if (npos && !interrupt && (strlen(pos[1]) >= 64 || strpbrk(pos[1], "/?#%& "))) {
        tide_err_set(&err, TIDE_EINVAL, NULL, "'%s' is not a node name", pos[1]);
        return cli_usage_fail("nodes", &err);
    }
    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0)
        return cli_fail("nodes", &err);
    int rc;
    json_t *root;
    if (npos && !interrupt) {
        rc = operate(&c, pos[0], pos[1], reason, force);
    } else if (npos) {
        char path[64];
        snprintf(path, sizeof path, "/v1/nodes/%lld/interrupt", node_id);
        if (cli_client_request_json(&c, "POST", path, "{}", &root, &err) < 0) {
            rc = cli_fail("nodes", &err);
        } else {
            printf("node %lld interrupted: %lld job(s) asked to checkpoint and stop\n", node_id,
                   (long long)json_integer_value(json_object_get(root, "jobs_preempted")));
            json_decref(root);
            rc = 0;
        }
    } else if (cli_client_request_json(&c, "GET", "/v1/nodes", NULL, &root, &err) < 0)
        rc = cli_fail("nodes", &err);
    else if (c.json) {
        filter_nodes(root, &filter);
        char *text = json_dumps(root, JSON_COMPACT);
        rc = text ? cli_print_body(text, strlen(text)) : 1;
        free(text);
        json_decref(root);
    } else {
        rc = print_nodes(root, per_gpu, &filter);
        json_decref(root);
    }
    cli_client_release(&c);
    return rc;
}
