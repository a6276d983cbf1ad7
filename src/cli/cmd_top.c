/* `tide top`: a live view of the cluster, redrawn every few seconds: the
 * queue in numbers, nodes with their GPU use, running jobs and the first
 * waiting ones. Plain ANSI (clear and redraw), no curses; --once draws one
 * frame without clearing (scripts, tests). q or Ctrl-C quits. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/fmt.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "cli/table.h"

#define TOP_PENDING_SHOWN 10
#define TOP_RUNNING_SHOWN 20
#define TOP_LIST_LIMIT 1000 /* jobs asked for per state (the API's default limit) */

static const char top_usage[] =
    "usage: tide top [--once] [--interval SECONDS] [--server URL] [--token T]\n"
    "\n"
    "A live view, redrawn every --interval seconds (default 2): jobs by state\n"
    "(held ones counted apart), GPUs allocated and their average utilisation,\n"
    "nodes with their state and GPU use, running jobs (longest first) and the\n"
    "first waiting jobs with why they wait. q or Ctrl-C quits.\n"
    "  --once            draw one frame and exit (no screen clearing)\n"
    "  --interval SECS   seconds between frames, 1 to 3600\n";

enum { OPT_ONCE = 1, OPT_INTERVAL };

static const struct cli_opt top_opts[] = {
    {"--once", CLI_OPT_FLAG, OPT_ONCE},
    {"--interval", CLI_OPT_VALUE, OPT_INTERVAL},
    CLI_COMMON_OPTS,
    {NULL, 0, 0},
};

static volatile sig_atomic_t top_stop;

static void on_signal(int sig)
{
    (void)sig;
    top_stop = 1;
}

/* What one frame shows, fetched before anything is drawn. */
struct top_data {
    json_t *running, *starting, *pending, *nodes;
};

static void top_data_release(struct top_data *d)
{
    json_decref(d->running);
    json_decref(d->starting);
    json_decref(d->pending);
    json_decref(d->nodes);
    memset(d, 0, sizeof *d);
}

static int fetch(struct cli_client *c, struct top_data *d, struct tide_err *err)
{
    json_t *root = NULL;
    static const struct {
        const char *path;
        size_t offset;
        const char *key;
    } calls[] = {
        {"/v1/jobs?state=running&order=oldest&limit=1000", offsetof(struct top_data, running),
         "jobs"},
        {"/v1/jobs?state=starting&order=oldest&limit=1000", offsetof(struct top_data, starting),
         "jobs"},
        {"/v1/jobs?state=pending&order=oldest&limit=1000", offsetof(struct top_data, pending),
         "jobs"},
        {"/v1/nodes", offsetof(struct top_data, nodes), "nodes"},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        if (cli_client_request_json(c, "GET", calls[i].path, NULL, &root, err) < 0)
            return -1;
        json_t *list = json_object_get(root, calls[i].key);
        if (!json_is_array(list)) {
            json_decref(root);
            return tide_err_set(err, TIDE_EIO, NULL, "the answer to %s has no \"%s\" list",
                                calls[i].path, calls[i].key);
        }
        *(json_t **)((char *)d + calls[i].offset) = json_incref(list);
        json_decref(root);
    }
    return 0;
}

static void print_summary(const struct top_data *d, const char *server)
{
    size_t held = 0, i;
    json_t *j;
    json_array_foreach(d->pending, i, j) held += json_is_true(json_object_get(j, "held"));
    long long gpus = 0, allocated = 0, ready = 0, draining = 0, lost = 0, other = 0;
    double util = 0;
    long long util_n = 0;
    json_t *n;
    json_array_foreach(d->nodes, i, n)
    {
        const char *state = cli_json_text(json_object_get(n, "state"), "");
        if (!strcmp(state, "released"))
            continue;
        if (!strcmp(state, "ready"))
            ready++;
        else if (!strcmp(state, "draining"))
            draining++;
        else if (!strcmp(state, "lost"))
            lost++;
        else
            other++;
        if (strcmp(state, "ready") != 0)
            continue; /* GPUs of ready nodes, as tide_gpus counts them */
        gpus += (long long)cli_json_number(json_object_get(n, "gpus_total"), 0);
        allocated += (long long)cli_json_number(json_object_get(n, "gpus_allocated"), 0);
        size_t k;
        json_t *g;
        json_array_foreach(json_object_get(n, "gpus"), k, g)
        {
            util += cli_json_number(json_object_get(g, "utilization_pct"), 0);
            util_n++;
        }
    }
    time_t now = time(NULL);
    struct tm tm;
    char when[32];
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    printf("tide top   %s   %s\n", server, when);
    /* The listings stop at TOP_LIST_LIMIT jobs: a full one is "at least". */
    size_t counts[] = {json_array_size(d->running), json_array_size(d->starting),
                       json_array_size(d->pending)};
    const char *more[3];
    for (int k = 0; k < 3; k++)
        more[k] = counts[k] >= TOP_LIST_LIMIT ? "+" : "";
    printf("jobs:  %zu%s running, %zu%s starting, %zu%s pending (%zu held)\n", counts[0], more[0],
           counts[1], more[1], counts[2], more[2], held);
    printf("gpus:  %lld/%lld allocated, average utilisation %.0f%%\n", allocated, gpus,
           util_n ? util / (double)util_n : 0.0);
    printf("nodes: %lld ready, %lld draining, %lld lost", ready, draining, lost);
    if (other)
        printf(", %lld other", other);
    printf("\n");
}

static int print_nodes(const struct top_data *d)
{
    static const char *const headers[] = {"NODE", "STATE", "POOL", "ALLOC", "UTIL", "JOBS"};
    struct cli_table *t = cli_table_create(6, headers);
    if (!t)
        return 1;
    int rc = 0;
    size_t i;
    json_t *n;
    json_array_foreach(d->nodes, i, n)
    {
        const char *state = cli_json_text(json_object_get(n, "state"), "?");
        if (!strcmp(state, "released"))
            continue;
        if (!strcmp(state, "draining") && json_is_string(json_object_get(n, "drain_reason")) &&
            cli_json_number(json_object_get(n, "jobs"), 1) == 0)
            state = "drained";
        char alloc[32], util[16] = "-", jobs[16];
        snprintf(alloc, sizeof alloc, "%.0f/%.0f",
                 cli_json_number(json_object_get(n, "gpus_allocated"), 0),
                 cli_json_number(json_object_get(n, "gpus_total"), 0));
        json_t *gpus = json_object_get(n, "gpus");
        double sum = 0;
        size_t k;
        json_t *g;
        json_array_foreach(gpus, k, g) sum +=
            cli_json_number(json_object_get(g, "utilization_pct"), 0);
        if (json_array_size(gpus))
            snprintf(util, sizeof util, "%.0f%%", sum / (double)json_array_size(gpus));
        snprintf(jobs, sizeof jobs, "%.0f", cli_json_number(json_object_get(n, "jobs"), 0));
        const char *cells[] = {cli_json_text(json_object_get(n, "name"), "?"),
                               state,
                               cli_json_text(json_object_get(n, "pool"), "-"),
                               alloc,
                               util,
                               jobs};
        rc |= cli_table_add(t, cells);
    }
    if (!rc)
        rc = cli_table_print(t, stdout);
    cli_table_destroy(t);
    return rc;
}

/* Earlier start first; a job not started yet (starting) after those that are. */
static int by_start(const void *a, const void *b)
{
    double x = cli_json_number(json_object_get(*(json_t *const *)a, "start_time"), 0);
    double y = cli_json_number(json_object_get(*(json_t *const *)b, "start_time"), 0);
    if ((x > 0) != (y > 0))
        return x > 0 ? -1 : 1;
    return (x > y) - (x < y);
}

/* Running and starting jobs, longest running first (by start time: the API
 * lists by submission). */
static int print_running(const struct top_data *d, double now)
{
    static const char *const headers[] = {"RUNNING", "NAME", "PROJECT", "USER",
                                          "GPUS",    "NODE", "STATE",   "FOR"};
    size_t n = json_array_size(d->running) + json_array_size(d->starting), k = 0;
    json_t **jobs = malloc((n ? n : 1) * sizeof *jobs);
    struct cli_table *t = jobs ? cli_table_create(8, headers) : NULL;
    if (!t) {
        free(jobs);
        return 1;
    }
    json_t *lists[] = {d->running, d->starting};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < json_array_size(lists[l]); i++)
            jobs[k++] = json_array_get(lists[l], i);
    qsort(jobs, n, sizeof *jobs, by_start);
    int rc = 0, shown = 0;
    for (size_t i = 0; i < n && shown < TOP_RUNNING_SHOWN; i++) {
        json_t *j = jobs[i];
        char id[24], gpus[16], age[24] = "-";
        snprintf(id, sizeof id, "%.0f", cli_json_number(json_object_get(j, "id"), 0));
        /* the spec's count: a gang's gpus list names its first node's alone */
        snprintf(gpus, sizeof gpus, "%.0f",
                 cli_json_number(json_object_get(json_object_get(j, "spec"), "gpus"),
                                 (double)json_array_size(json_object_get(j, "gpus"))));
        double start = cli_json_number(json_object_get(j, "start_time"), -1);
        if (start > 0)
            cli_fmt_duration(now - start, age, sizeof age);
        const char *cells[] = {id,
                               cli_json_text(json_object_get(j, "name"), "-"),
                               cli_json_text(json_object_get(j, "project"), "-"),
                               cli_json_text(json_object_get(j, "owner"), "-"),
                               gpus,
                               cli_json_text(json_object_get(j, "node"), "-"),
                               cli_json_text(json_object_get(j, "state"), "?"),
                               age};
        rc |= cli_table_add(t, cells);
        shown++;
    }
    free(jobs);
    if (!rc && shown)
        rc = cli_table_print(t, stdout);
    else if (!rc)
        printf("no job is running\n");
    cli_table_destroy(t);
    return rc;
}

/* The oldest waiting jobs (listed oldest first). */
static int print_pending(const struct top_data *d, double now)
{
    static const char *const headers[] = {"PENDING", "NAME",    "PROJECT", "PRIO",
                                          "GPUS",    "WAITING", "WHY"};
    struct cli_table *t = cli_table_create(7, headers);
    if (!t)
        return 1;
    int rc = 0, shown = 0;
    size_t n = json_array_size(d->pending);
    for (size_t i = 0; i < n && shown < TOP_PENDING_SHOWN; i++) {
        json_t *j = json_array_get(d->pending, i);
        json_t *spec = json_object_get(j, "spec");
        char id[24], prio[16], gpus[16], age[24] = "-";
        snprintf(id, sizeof id, "%.0f", cli_json_number(json_object_get(j, "id"), 0));
        snprintf(prio, sizeof prio, "%.0f",
                 cli_json_number(json_object_get(j, "effective_priority"),
                                 cli_json_number(json_object_get(j, "priority"), 0)));
        snprintf(gpus, sizeof gpus, "%.0f", cli_json_number(json_object_get(spec, "gpus"), 1));
        double submitted = cli_json_number(json_object_get(j, "submit_time"), -1);
        if (submitted > 0)
            cli_fmt_duration(now - submitted, age, sizeof age);
        const char *why = cli_json_text(json_object_get(j, "pending_reason"),
                                        cli_json_text(json_object_get(j, "reason"), "-"));
        const char *cells[] = {id,
                               cli_json_text(json_object_get(j, "name"), "-"),
                               cli_json_text(json_object_get(j, "project"), "-"),
                               prio,
                               gpus,
                               age,
                               why};
        rc |= cli_table_add(t, cells);
        shown++;
    }
    if (!rc && shown) {
        rc = cli_table_print(t, stdout);
        if (!rc && n > (size_t)shown)
            printf("... and %zu more pending\n", n - (size_t)shown);
    } else if (!rc) {
        printf("no job is waiting\n");
    }
    cli_table_destroy(t);
    return rc;
}

static int draw(struct cli_client *c, bool clear)
{
    struct top_data d = {0};
    struct tide_err err = {0};
    if (fetch(c, &d, &err) < 0) {
        top_data_release(&d);
        return cli_fail("top", &err);
    }
    double now = cli_now();
    if (clear)
        fputs("\033[H\033[2J", stdout);
    print_summary(&d, c->server);
    int rc = 0;
    printf("\n");
    rc |= print_nodes(&d);
    printf("\n");
    rc |= print_running(&d, now);
    printf("\n");
    rc |= print_pending(&d, now);
    top_data_release(&d);
    if (fflush(stdout) != 0)
        rc = 1;
    return rc;
}

/* Waits up to seconds for q on stdin (or a signal); true when it is time to quit. */
static bool wait_for_quit(int seconds, bool *stdin_open)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (top_stop)
            return true;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long left_ms = (long long)seconds * 1000 - ((now.tv_sec - start.tv_sec) * 1000LL +
                                                         (now.tv_nsec - start.tv_nsec) / 1000000);
        if (left_ms <= 0)
            return false;
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int r = poll(&p, *stdin_open ? 1 : 0, (int)(left_ms > 250 ? 250 : left_ms));
        if (r < 0 && errno != EINTR)
            return true;
        if (r > 0) {
            char ch;
            ssize_t got = read(STDIN_FILENO, &ch, 1);
            if (got <= 0)
                *stdin_open = false; /* closed: only signals quit now */
            else if (ch == 'q' || ch == 'Q' || ch == 3)
                return true;
        }
    }
}

int cli_top_main(int argc, char **argv)
{
    struct cli_common co = {0};
    struct cli_args a;
    struct tide_err err = {0};
    const char *v;
    int id, r, once = 0;
    long long interval = 2;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, top_opts, &id, &v, &err)) != CLI_ARGS_END) {
        if (r < 0)
            return cli_usage_fail("top", &err);
        if (r == CLI_ARGS_POSITIONAL) {
            tide_err_set(&err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
            return cli_usage_fail("top", &err);
        }
        if (id == OPT_ONCE) {
            once = 1;
        } else if (id == OPT_INTERVAL) {
            if (cli_parse_ll("--interval", v, &interval, &err) < 0)
                return cli_usage_fail("top", &err);
            if (interval < 1 || interval > 3600) {
                tide_err_set(&err, TIDE_EINVAL, "--interval",
                             "--interval: must be 1 to 3600 seconds, got %lld", interval);
                return cli_usage_fail("top", &err);
            }
        } else {
            cli_common_apply(&co, id, v);
        }
    }
    if (co.help) {
        fputs(top_usage, stdout);
        return 0;
    }
    if (co.json) {
        tide_err_set(&err, TIDE_EINVAL, "--json",
                     "--json: tide top draws for people; use the "
                     "API (tide jobs --json, tide nodes --json)");
        return cli_usage_fail("top", &err);
    }
    struct cli_client c;
    if (cli_client_init(&c, &co, &err) < 0)
        return cli_fail("top", &err);
    if (once) {
        int rc = draw(&c, false);
        cli_client_release(&c);
        return rc;
    }
    /* Keys without Enter, not echoed, while a terminal is ours. */
    struct termios saved;
    bool raw = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    if (raw) {
        struct termios t = saved;
        t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    bool clear = isatty(STDOUT_FILENO), stdin_open = true;
    int rc = 0;
    while (!top_stop) {
        rc = draw(&c, clear);
        if (rc)
            break;
        if (!clear)
            printf("\n");
        if (wait_for_quit((int)interval, &stdin_open))
            break;
    }
    if (raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    cli_client_release(&c);
    return rc;
}
