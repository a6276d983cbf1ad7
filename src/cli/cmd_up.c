/*
 * `tide up`: a whole cluster on this machine for trying tide out. Starts
 * `tide server` and N `tide agent`s with fake GPUs under DIR (./.tide),
 * waits until they are ready, then stays in the foreground until Ctrl-C or
 * SIGTERM, when it stops the agents, then the server. If a child dies on
 * its own it reports that and stops the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/client.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "cli/up_net.h"
#include "cli/up_proc.h"
#include "cli/up_tls.h"
#include "common/fsutil.h"
#include "common/http_client.h"

#define UP_MAX_AGENTS 32
#define UP_MAX_SHAPES 8
#define UP_START_TIMEOUT_MS 30000
#define UP_REGISTER_TIMEOUT_MS 15000
#define UP_STOP_GRACE_MS 15000

static const char up_usage[] =
    "usage: tide up [--dir DIR] [--port N] [--agents N] [--fake-gpus SPEC ...] [--tls]\n"
    "\n"
    "Runs a tide server and local agents with fake GPUs on this machine, keeping\n"
    "everything under DIR, until Ctrl-C. An elastic pool 'elastic' (0 to 3 nodes of\n"
    "4xH200) grows when jobs wait and shrinks when idle; DIR/tide.yaml replaces it.\n"
    "  --dir DIR         state, tokens and logs (default .tide)\n"
    "  --port N          server port on 127.0.0.1 (default 8080; 0 picks a free one)\n"
    "  --agents N        number of agents (default 2)\n"
    "  --fake-gpus SPEC  GPUs of the agents, e.g. 4xH200:141GB; repeat it to give\n"
    "                    agents different shapes, used in turn (default: 4xH200:141GB\n"
    "                    and 2xA100:80GB alternately)\n"
    "  --tls             serve HTTPS: a CA for this machine, a server certificate and\n"
    "                    an agent client certificate it signed go to DIR/tls/ (kept\n"
    "                    for later runs); agents and the CLI verify the server with\n"
    "                    DIR/tls/ca.crt, and agents must show their certificate\n";

enum { OPT_DIR = 1, OPT_PORT, OPT_AGENTS, OPT_FAKE, OPT_TLS };

static const struct cli_opt up_opts[] = {
    {"--dir", CLI_OPT_VALUE, OPT_DIR},
    {"--port", CLI_OPT_VALUE, OPT_PORT},
    {"--agents", CLI_OPT_VALUE, OPT_AGENTS},
    {"--fake-gpus", CLI_OPT_VALUE, OPT_FAKE},
    {"--tls", CLI_OPT_FLAG, OPT_TLS},
    {"--help", CLI_OPT_FLAG, CLI_ID_HELP},
    {"-h", CLI_OPT_FLAG, CLI_ID_HELP},
    {NULL, 0, 0},
};

struct up {
    const char *dir_arg; /* as the user wrote it, for messages */
    char dir[PATH_MAX];  /* absolute */
    int port;
    int agents;
    const char *shapes[UP_MAX_SHAPES];
    int nshapes;
    int tls;            /* --tls */
    char tls_dir[PATH_MAX]; /* DIR/tls when --tls */
    char url[64];
    sigset_t signals;
    struct up_child server;
    struct up_child agent[UP_MAX_AGENTS];
};

static int up_parse(struct up *u, int argc, char **argv, int *help, struct tide_err *err)
{
    struct cli_args a;
    const char *v;
    int id, r;
    long long n;
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, up_opts, &id, &v, err)) != CLI_ARGS_END) {
        if (r < 0)
            return r;
        if (r == CLI_ARGS_POSITIONAL)
            return tide_err_set(err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
        switch (id) {
        case CLI_ID_HELP: *help = 1; break;
        case OPT_TLS: u->tls = 1; break;
        case OPT_DIR: u->dir_arg = v; break;
        case OPT_PORT:
            if (cli_parse_ll("--port", v, &n, err) < 0)
                return TIDE_EINVAL;
            if (n < 0 || n > 65535)
                return tide_err_set(err, TIDE_EINVAL, NULL, "--port: %lld is not 0..65535", n);
            u->port = (int)n;
            break;
        case OPT_AGENTS:
            if (cli_parse_ll("--agents", v, &n, err) < 0)
                return TIDE_EINVAL;
            if (n < 0 || n > UP_MAX_AGENTS)
                return tide_err_set(err, TIDE_EINVAL, NULL, "--agents: %lld is not 0..%d", n,
                                    UP_MAX_AGENTS);
            u->agents = (int)n;
            break;
        case OPT_FAKE:
            if (u->nshapes == UP_MAX_SHAPES)
                return tide_err_set(err, TIDE_EINVAL, NULL, "--fake-gpus: at most %d shapes",
                                    UP_MAX_SHAPES);
            u->shapes[u->nshapes++] = v;
            break;
        }
    }
    if (a.next < argc)
        return tide_err_set(err, TIDE_EINVAL, NULL, "unexpected argument '%s'", argv[a.next]);
    return 0;
}

static int up_path(char *buf, const struct up *u, const char *rest)
{
    return snprintf(buf, PATH_MAX, "%s/%s", u->dir, rest) < PATH_MAX ? 0 : TIDE_EINVAL;
}

/* Creates DIR and its subfolders, resolves DIR to an absolute path. */
static int up_make_dirs(struct up *u, struct tide_err *err)
{
    static const char *const subdirs[] = {"data", "logs", "agents"};
    int rc = fs_mkdir_p(u->dir_arg, 0700);
    if (rc < 0)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot create %s: %s", u->dir_arg,
                            strerror(-rc));
    if (!realpath(u->dir_arg, u->dir))
        return tide_err_set(err, TIDE_EIO, NULL, "%s: %s", u->dir_arg, strerror(errno));
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        char path[PATH_MAX];
        if (up_path(path, u, subdirs[i]) < 0)
            return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
        if ((rc = fs_mkdir_p(path, 0700)) < 0)
            return tide_err_set(err, TIDE_EIO, NULL, "cannot create %s: %s", path,
                                strerror(-rc));
    }
    return 0;
}

/* Refuses to start over a live cluster using the same DIR; drops a stale
 * server.url so nobody follows it to a dead server. */
static int up_check_not_running(struct up *u, struct tide_err *err)
{
    char path[PATH_MAX], *old = NULL;
    if (up_path(path, u, "server.url") < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    if (fs_read_file(path, 4096, &old, NULL) != 0)
        return 0;
    old[strcspn(old, " \t\r\n")] = '\0';
    int live = *old && up_net_healthy(old, 1000);
    if (live)
        tide_err_set(err, TIDE_ECONFLICT, NULL,
                     "a tide server already answers at %s (from %s/server.url); stop that "
                     "'tide up' first or use another --dir",
                     old, u->dir_arg);
    free(old);
    if (live)
        return TIDE_ECONFLICT;
    if (unlink(path) != 0 && errno != ENOENT)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}

static int up_choose_port(struct up *u, struct tide_err *err)
{
    if (u->port == 0) {
        int port = up_net_free_port(err);
        if (port < 0)
            return port;
        u->port = port;
    } else if (!up_net_port_free(u->port)) {
        return tide_err_set(err, TIDE_EIO, NULL,
                            "port %d on 127.0.0.1 is in use; pass --port 0 to pick a free one",
                            u->port);
    }
    snprintf(u->url, sizeof u->url, "%s://127.0.0.1:%d", u->tls ? "https" : "http", u->port);
    return 0;
}

/* Waits up to timeout_ms for a queued signal; returns it, or 0 on timeout. */
static int up_wait_signal(struct up *u, long timeout_ms)
{
    struct timespec ts = {.tv_sec = timeout_ms / 1000, .tv_nsec = (timeout_ms % 1000) * 1000000};
    int sig = sigtimedwait(&u->signals, NULL, &ts);
    return sig > 0 ? sig : 0;
}

/* Prints the last lines of a child's log, where its reason usually is. */
static void up_print_log_tail(const struct up_child *ch)
{
    char buf[1500];
    int fd = open(ch->log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *text = buf;
    if (from > 0 && strchr(text, '\n'))
        text = strchr(text, '\n') + 1;
    fprintf(stderr, "---- last lines of %s ----\n%s%s----\n", ch->log_path, text,
            buf[n - 1] == '\n' ? "" : "\n");
}

static void up_report_death(const struct up_child *ch)
{
    char how[96];
    up_child_describe_exit(ch, how, sizeof how);
    fprintf(stderr, "tide up: %s %s unexpectedly\n", ch->name, how);
    up_print_log_tail(ch);
}

/* Returns the first child that is no longer running, or NULL. */
static struct up_child *up_find_dead(struct up *u)
{
    if (u->server.pid && up_child_reap(&u->server))
        return &u->server;
    for (int i = 0; i < u->agents; i++)
        if (u->agent[i].pid && up_child_reap(&u->agent[i]))
            return &u->agent[i];
    return NULL;
}

/* The embedded default: one elastic pool the local provider fills with
 * agents of fake GPUs when the fixed agents are full, and empties again. */
static const char up_default_config[] =
    "# Written by tide up; put your own tide.yaml in this directory to replace it.\n"
    "pools:\n"
    "  - name: elastic\n"
    "    gpu: H200\n"
    "    gpus_per_node: 4\n"
    "    gpu_memory_mib: 144384\n"
    "    provider: local\n"
    "    min_nodes: 0\n"
    "    max_nodes: 3\n"
    "    boot_time_s: 3\n"
    "    price_per_node_hour: 12.00\n"
    "    billing: on_demand\n"
    "    scale_down_window_s: 60\n"
    "    cooldown_s: 30\n";

/* DIR/tide.yaml when the user put one there, else the embedded default
 * written to DIR/up-default.yaml. */
static int up_config_path(struct up *u, char *path, struct tide_err *err)
{
    if (up_path(path, u, "tide.yaml") < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    if (access(path, R_OK) == 0)
        return 0;
    if (up_path(path, u, "up-default.yaml") < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot write %s: %s", path, strerror(errno));
    size_t len = sizeof up_default_config - 1;
    int bad = fwrite(up_default_config, 1, len, f) != len;
    if (fclose(f) != 0 || bad)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot write %s", path);
    return 0;
}

/* --tls: makes (or keeps) DIR/tls's certificates, and hands their paths to
 * this process's requests and, through the environment, to every agent
 * started from here or by the server's local pool. */
static int up_prepare_tls(struct up *u, struct tide_err *err)
{
    if (!u->tls)
        return 0;
    if (up_path(u->tls_dir, u, "tls") < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    int rc = fs_mkdir_p(u->tls_dir, 0700), created = 0;
    if (rc < 0)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot create %s: %s", u->tls_dir,
                            strerror(-rc));
    if ((rc = up_tls_ensure(u->tls_dir, &created, err)) < 0)
        return rc;
    printf("tide up: %s TLS certificates in %s/tls (CA %s/tls/" UP_TLS_CA ")\n",
           created ? "new" : "using the", u->dir_arg, u->dir_arg);
    char ca[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
    if (up_path(ca, u, "tls/" UP_TLS_CA) < 0 || up_path(cert, u, "tls/" UP_TLS_AGENT_CERT) < 0 ||
        up_path(key, u, "tls/" UP_TLS_AGENT_KEY) < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    if (setenv("TIDE_CA", ca, 1) != 0 || setenv("TIDE_TLS_CERT", cert, 1) != 0 ||
        setenv("TIDE_TLS_KEY", key, 1) != 0)
        return tide_err_set(err, TIDE_EIO, NULL, "setenv: %s", strerror(errno));
    return http_client_set_ca(ca, "--tls", err);
}

static int up_start_server(struct up *u, struct tide_err *err)
{
    char listen[32], data[PATH_MAX], log[PATH_MAX], config[PATH_MAX];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", u->port);
    if (up_path(data, u, "data") < 0 || up_path(log, u, "logs/server.log") < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    int rc = up_config_path(u, config, err);
    if (rc < 0)
        return rc;
    char cert[PATH_MAX], key[PATH_MAX], ca[PATH_MAX];
    if (u->tls && (up_path(cert, u, "tls/" UP_TLS_SERVER_CERT) < 0 ||
                   up_path(key, u, "tls/" UP_TLS_SERVER_KEY) < 0 || up_path(ca, u, "tls/" UP_TLS_CA) < 0))
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    char *argv[] = {"tide", "server", "--listen", listen, "--data", data, "--config", config,
                    "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", ca, NULL};
    if (!u->tls)
        argv[8] = NULL;
    return up_child_start(&u->server, "server", argv, log, err);
}

/* Waits until the server answers /healthz and has written join.token.
 * Returns 0, 1 when a signal asked us to stop, or a negative code. */
static int up_wait_server(struct up *u, struct tide_err *err)
{
    char join[PATH_MAX];
    if (up_path(join, u, "data/join.token") < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    int64_t deadline = clock_mono_ms() + UP_START_TIMEOUT_MS;
    while (clock_mono_ms() < deadline) {
        if (up_child_reap(&u->server)) {
            up_report_death(&u->server);
            return tide_err_set(err, TIDE_EIO, NULL, "the server did not start");
        }
        if (up_net_healthy(u->url, 1000) && access(join, R_OK) == 0)
            return 0;
        int sig = up_wait_signal(u, 200);
        if (sig == SIGINT || sig == SIGTERM)
            return 1;
    }
    return tide_err_set(err, TIDE_EIO, NULL,
                        "the server did not answer %s/healthz within %d s (see %s)", u->url,
                        UP_START_TIMEOUT_MS / 1000, u->server.log_path);
}

static int up_start_agents(struct up *u, struct tide_err *err)
{
    static const char *const default_shapes[] = {"4xH200:141GB", "2xA100:80GB"};
    char join[PATH_MAX];
    if (up_path(join, u, "data/join.token") < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    for (int i = 0; i < u->agents; i++) {
        char name[32], rel[64], work[PATH_MAX], log[PATH_MAX];
        snprintf(name, sizeof name, "local-%d", i + 1);
        const char *shape = u->nshapes ? u->shapes[i % u->nshapes] : default_shapes[i % 2];
        snprintf(rel, sizeof rel, "agents/%s", name);
        if (up_path(work, u, rel) < 0)
            return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
        snprintf(rel, sizeof rel, "logs/%s.log", name);
        if (up_path(log, u, rel) < 0)
            return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
        int rc = fs_mkdir_p(work, 0700);
        if (rc < 0)
            return tide_err_set(err, TIDE_EIO, NULL, "cannot create %s: %s", work,
                                strerror(-rc));
        /* a local cluster runs jobs as the user who started it, root too:
         * the quick start's job reads the directory it was submitted from */
        char *argv[] = {"tide",   "agent", "--server", u->url, "--token-file", join,
                        "--name", name,    "--work",   work,   "--fake-gpus",  (char *)shape,
                        NULL,     NULL,    NULL,       NULL};
        if (geteuid() == 0) {
            argv[12] = "--job-user";
            argv[13] = "root";
            argv[14] = "--allow-root-jobs";
        }
        if ((rc = up_child_start(&u->agent[i], name, argv, log, err)) < 0)
            return rc;
        printf("tide up: agent %s with %s (log %s/logs/%s.log)\n", name, shape, u->dir_arg,
               name);
    }
    return 0;
}

/* How many of our agents the server lists as ready; -1 if it cannot say. */
static int up_ready_agents(struct up *u, struct cli_client *c)
{
    json_t *root;
    if (cli_client_request_json(c, "GET", "/v1/nodes", NULL, &root, NULL) < 0)
        return -1;
    int ready = 0;
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(root, "nodes"), i, node)
    {
        const char *name = json_string_value(json_object_get(node, "name"));
        const char *state = json_string_value(json_object_get(node, "state"));
        if (name && state && !strncmp(name, "local-", 6) && !strcmp(state, "ready"))
            ready++;
    }
    json_decref(root);
    return ready > u->agents ? u->agents : ready;
}

/* Waits (bounded) for the agents to register, so the banner means "ready".
 * Returns 0, 1 on a stop signal, or a negative code when a child died. */
static int up_wait_agents(struct up *u, struct tide_err *err)
{
    char token_path[PATH_MAX];
    if (u->agents == 0 || up_path(token_path, u, "data/admin.token") < 0 ||
        access(token_path, R_OK) != 0)
        return 0;
    /* the file, not its token as if given with --token (a warning for ps) */
    struct cli_common co = {.server = u->url, .token_file = token_path};
    struct cli_client c;
    int rc = cli_client_init(&c, &co, err);
    if (rc < 0) {
        cli_client_release(&c);
        return 0;
    }
    int64_t deadline = clock_mono_ms() + UP_REGISTER_TIMEOUT_MS;
    int ready = 0;
    while (rc == 0 && (ready = up_ready_agents(u, &c)) < u->agents &&
           clock_mono_ms() < deadline) {
        struct up_child *dead = up_find_dead(u);
        if (dead) {
            up_report_death(dead);
            rc = tide_err_set(err, TIDE_EIO, NULL, "%s died while starting", dead->name);
        } else {
            int sig = up_wait_signal(u, 250);
            if (sig == SIGINT || sig == SIGTERM)
                rc = 1;
        }
    }
    cli_client_release(&c);
    if (rc == 0 && ready < u->agents)
        fprintf(stderr,
                "tide up: warning: %d of %d agents registered after %d s; see %s/logs/\n",
                ready < 0 ? 0 : ready, u->agents, UP_REGISTER_TIMEOUT_MS / 1000, u->dir_arg);
    return rc;
}

static void up_print_banner(const struct up *u)
{
    int default_dir = !strcmp(u->dir_arg, ".tide") || !strcmp(u->dir_arg, "./.tide");
    printf("\ntide is up: server %s, %d agent%s. Try:\n", u->url, u->agents,
           u->agents == 1 ? "" : "s");
    if (!default_dir)
        printf("  export TIDE_SERVER=%s TIDE_TOKEN=$(cat %s/data/admin.token)%s%s%s\n", u->url,
               u->dir_arg, u->tls ? " TIDE_CA=" : "", u->tls ? u->tls_dir : "",
               u->tls ? "/" UP_TLS_CA : "");
    printf("  tide nodes\n"
           "  tide submit --gpus 1 -- sh -c 'echo hello; sleep 5'\n"
           "  tide jobs\n"
           "Dashboard: %s/ (sign in with the admin token)\n"
           "Admin token: %s/data/admin.token   Logs: %s/logs/\n"
           "%sCtrl-C stops the cluster.\n",
           u->url, u->dir_arg, u->dir_arg,
           default_dir ? "(tide commands run from this directory find both by themselves.)\n"
                       : "");
    fflush(stdout);
}

static int up_write_url(const struct up *u, struct tide_err *err)
{
    char path[PATH_MAX], line[80];
    if (up_path(path, u, "server.url") < 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", u->dir);
    int n = snprintf(line, sizeof line, "%s\n", u->url);
    int rc = fs_write_file_atomic(path, line, (size_t)n, 0644);
    if (rc < 0)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot write %s: %s", path, strerror(-rc));
    return 0;
}

/* Stops agents, then the server. */
static void up_shutdown(struct up *u)
{
    int running = 0;
    for (int i = 0; i < u->agents; i++)
        running += u->agent[i].pid && !up_child_reap(&u->agent[i]);
    if (running)
        fprintf(stderr, "tide up: stopping %d agent%s\n", running, running == 1 ? "" : "s");
    int killed = up_children_stop(u->agent, (size_t)u->agents, UP_STOP_GRACE_MS);
    if (u->server.pid && !up_child_reap(&u->server)) {
        fprintf(stderr, "tide up: stopping the server\n");
        killed += up_children_stop(&u->server, 1, UP_STOP_GRACE_MS);
    }
    if (killed)
        fprintf(stderr, "tide up: %d process%s did not stop within %d s and got SIGKILL\n",
                killed, killed == 1 ? "" : "es", UP_STOP_GRACE_MS / 1000);
    char path[PATH_MAX];
    if (up_path(path, u, "server.url") == 0)
        unlink(path);
}

/* Supervises until a stop signal (returns 0) or a child's death (1). */
static int up_supervise(struct up *u)
{
    for (;;) {
        struct up_child *dead = up_find_dead(u);
        if (dead) {
            up_report_death(dead);
            fprintf(stderr, "tide up: shutting the rest down\n");
            return 1;
        }
        int sig = up_wait_signal(u, 1000);
        if (sig == SIGINT || sig == SIGTERM) {
            fprintf(stderr, "\ntide up: %s received\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
            return 0;
        }
    }
}

int cli_up_main(int argc, char **argv)
{
    static struct up u; /* large (paths); one per process */
    struct tide_err err = {0};
    int help = 0;
    memset(&u, 0, sizeof u);
    u.dir_arg = ".tide";
    u.port = 8080;
    u.agents = 2;
    if (up_parse(&u, argc, argv, &help, &err) < 0)
        return cli_usage_fail("up", &err);
    if (help) {
        fputs(up_usage, stdout);
        return 0;
    }
    if (http_client_global_init() != 0) {
        tide_err_set(&err, TIDE_EIO, NULL, "cannot initialise the HTTP client (libcurl)");
        return cli_fail("up", &err);
    }
    if (up_make_dirs(&u, &err) < 0 || up_prepare_tls(&u, &err) < 0 ||
        up_check_not_running(&u, &err) < 0 ||
        up_choose_port(&u, &err) < 0 || up_proc_init(&u.signals, &err) < 0 ||
        up_start_server(&u, &err) < 0)
        return cli_fail("up", &err);
    printf("tide up: server on %s (data %s/data, log %s/logs/server.log)\n", u.url, u.dir_arg,
           u.dir_arg);
    fflush(stdout);

    int rc = up_wait_server(&u, &err);
    if (rc == 0 && (rc = up_write_url(&u, &err)) == 0 && (rc = up_start_agents(&u, &err)) == 0) {
        fflush(stdout);
        rc = up_wait_agents(&u, &err);
    }
    int status;
    if (rc < 0) {
        cli_fail("up", &err);
        status = 1;
    } else if (rc == 1) {
        status = 0; /* stopped by a signal while starting */
    } else {
        up_print_banner(&u);
        status = up_supervise(&u);
    }
    up_shutdown(&u);
    fprintf(stderr, "tide up: stopped\n");
    return status;
}
