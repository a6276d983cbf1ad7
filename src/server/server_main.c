/*
 * `tide server`: opens the store, creates the tokens on first start,
 * rebuilds the scheduler's cache from the database, then serves the API
 * and runs the scheduler until SIGINT/SIGTERM.
 */
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/report.h"
#include "cli/roles.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "server/agent_wake.h"
#include "server/config.h"
#include "server/data_lock.h"
#include "server/http_tls.h"
#include "server/lead.h"
#include "server/pool_loop.h"
#include "server/retention.h"
#include "server/submit_batch.h"
#include "store/store_idempotency.h"
#include "store/store_pools.h"
#include "store/store_tokens.h"
#include "server/server.h"
#include "server/usage_meter.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static const char server_usage[] =
    "usage: tide server [options]\n\n"
    "  --listen HOST:PORT       address to serve on (default 127.0.0.1:8080)\n"
    "  --agent-listen HOST:PORT serve the agent protocol (and /healthz) here, with its own\n"
    "                           connections, and no longer on --listen (docs/api.md)\n"
    "  --data DIR               state directory: database, tokens, logs (default ./tide-data)\n"
    "  --store URL|PATH         database: postgres://USER[:PASSWORD]@HOST[:PORT]/DB for\n"
    "                           PostgreSQL, or a SQLite file (default DATA/tide.db)\n"
    "  --config FILE            tide.yaml with server and scheduler settings (flags win)\n"
    "  --check-config           read --config and the flags, say what they set, and exit\n"
    "                           (0: the server would start with them; nothing is created)\n"
    "  --node-timeout-ms N      declare a node lost after N ms without heartbeat (default 30000)\n"
    "  --heartbeat-ms N         heartbeat interval told to agents (default 1000)\n"
    "  --kill-grace-s N         SIGTERM→SIGKILL grace for stopped tasks (default 10)\n"
    "  --placement NAME         placement strategy (default binpack)\n"
    "  --max-gpu-mem-pct N      skip GPUs with more memory in use (default 80)\n"
    "  --max-gpu-util-pct N     skip GPUs busier than this (default 90)\n"
    "  --tls-cert FILE          serve HTTPS with this PEM certificate (chain)\n"
    "  --tls-key FILE           ... and its PEM private key\n"
    "  --tls-client-ca FILE     agents must present a client certificate this CA signed\n"
    "  --tls-client-cn-is-node  ... whose common name (CN) is their node's name\n"
    "  --insecure-plain-http    allow plain HTTP on an address other than 127.x.x.x\n"
    "  --advertise-url URL      the URL agents and clients reach this server by, told to\n"
    "                           them by followers (default: from --listen; docs/ha.md)\n"
    "  --agent-servers URL[,URL...]  TIDE_SERVER for the agents of pool providers: every\n"
    "                           server sharing the store (default: this server's URL)\n"
    "  --no-shared-join-token   DIR/join.token registers no node: only join tokens bound\n"
    "                           to one node do (tide token create --join --node NAME)\n"
    "  --help                   this text\n\n"
    "On first start the server writes DIR/admin.token and DIR/join.token (mode 0600).\n"
    "Without --tls-cert the server speaks plain HTTP, which it only does on loopback\n"
    "unless --insecure-plain-http is given (docs/api.md, \"TLS\").\n"
    "With a store that several servers share, a server follows until the store makes\n"
    "it the leader; a leader that loses its store connection exits with status 3\n"
    "(docs/ha.md), as does a server that cannot read the store back after a write it\n"
    "refused (docs/store.md).\n";

enum {
    OPT_LISTEN = 1,
    OPT_AGENT_LISTEN,
    OPT_DATA,
    OPT_CONFIG,
    OPT_CHECK,
    OPT_NODE_TIMEOUT,
    OPT_HEARTBEAT,
    OPT_KILL_GRACE,
    OPT_PLACEMENT,
    OPT_MEM_PCT,
    OPT_UTIL_PCT,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_TLS_CLIENT_CA,
    OPT_PLAIN,
    OPT_ADVERTISE,
    OPT_AGENT_SERVERS,
    OPT_STORE,
    OPT_NO_SHARED_JOIN,
    OPT_CN_IS_NODE,
    OPT_COUNT
};

static const struct cli_opt server_opts[] = {
    {"--listen", CLI_OPT_VALUE, OPT_LISTEN},
    {"--agent-listen", CLI_OPT_VALUE, OPT_AGENT_LISTEN},
    {"--data", CLI_OPT_VALUE, OPT_DATA},
    {"--config", CLI_OPT_VALUE, OPT_CONFIG},
    {"--check-config", CLI_OPT_FLAG, OPT_CHECK},
    {"--node-timeout-ms", CLI_OPT_VALUE, OPT_NODE_TIMEOUT},
    {"--heartbeat-ms", CLI_OPT_VALUE, OPT_HEARTBEAT},
    {"--kill-grace-s", CLI_OPT_VALUE, OPT_KILL_GRACE},
    {"--placement", CLI_OPT_VALUE, OPT_PLACEMENT},
    {"--max-gpu-mem-pct", CLI_OPT_VALUE, OPT_MEM_PCT},
    {"--max-gpu-util-pct", CLI_OPT_VALUE, OPT_UTIL_PCT},
    {"--tls-cert", CLI_OPT_VALUE, OPT_TLS_CERT},
    {"--tls-key", CLI_OPT_VALUE, OPT_TLS_KEY},
    {"--tls-client-ca", CLI_OPT_VALUE, OPT_TLS_CLIENT_CA},
    {"--insecure-plain-http", CLI_OPT_FLAG, OPT_PLAIN},
    {"--advertise-url", CLI_OPT_VALUE, OPT_ADVERTISE},
    {"--agent-servers", CLI_OPT_VALUE, OPT_AGENT_SERVERS},
    {"--store", CLI_OPT_VALUE, OPT_STORE},
    {"--no-shared-join-token", CLI_OPT_FLAG, OPT_NO_SHARED_JOIN},
    {"--tls-client-cn-is-node", CLI_OPT_FLAG, OPT_CN_IS_NODE},
    {"--help", CLI_OPT_FLAG, CLI_ID_HELP},
    {"-h", CLI_OPT_FLAG, CLI_ID_HELP},
    {NULL, 0, 0},
};

/* Spare checkpoint directories kept: two waves of starts on 128 GPUs. */
#define SERVER_CHECKPOINT_SPARES 256

/* The flags as given (the last of a repeated one wins), applied after
 * --config so that flags win over the file. */
#define SERVER_MAX_CONFIGS 8

struct server_flags {
    const char *value[OPT_COUNT];
    const char *configs[SERVER_MAX_CONFIGS]; /* --config may be repeated: read in order */
    int nconfigs;
    bool check, help, plain, no_shared_join, cn_is_node;
};

static int read_flags(int argc, char **argv, struct server_flags *f, struct tide_err *err)
{
    struct cli_args a;
    const char *v;
    int id, r;
    memset(f, 0, sizeof *f);
    cli_args_init(&a, argc, argv);
    while ((r = cli_args_next(&a, server_opts, &id, &v, err)) != CLI_ARGS_END) {
        if (r < 0)
            return r;
        if (r == CLI_ARGS_POSITIONAL)
            return tide_err_set(err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
        if (id == CLI_ID_HELP)
            f->help = true;
        else if (id == OPT_CHECK)
            f->check = true;
        else if (id == OPT_PLAIN)
            f->plain = true;
        else if (id == OPT_NO_SHARED_JOIN)
            f->no_shared_join = true;
        else if (id == OPT_CN_IS_NODE)
            f->cn_is_node = true;
        else if (id == OPT_CONFIG && f->nconfigs == SERVER_MAX_CONFIGS)
            return tide_err_set(err, TIDE_EINVAL, "config", "--config: at most %d files",
                                SERVER_MAX_CONFIGS);
        else if (id == OPT_CONFIG)
            f->value[id] = f->configs[f->nconfigs++] = v;
        else
            f->value[id] = v;
    }
    if (a.next < argc)
        return tide_err_set(err, TIDE_EINVAL, NULL, "unexpected argument '%s'", argv[a.next]);
    return 0;
}

/* Copies a file path option into dst, refusing an empty or too long one;
 * the error's field is the tide.yaml key ("tls_cert" for --tls-cert). */
static int apply_path(const char *flag, const char *v, char *dst, size_t size,
                      struct tide_err *err)
{
    if (!*v || strlen(v) >= size) {
        char field[32];
        size_t i = 0;
        for (; flag[i + 2] && i + 1 < sizeof field; i++)
            field[i] = flag[i + 2] == '-' ? '_' : flag[i + 2];
        field[i] = '\0';
        return tide_err_set(err, TIDE_EINVAL, field, "%s: %s", flag,
                            *v ? "path too long" : "must not be empty");
    }
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

static int apply_flags(const struct server_flags *f, struct server_config *cfg,
                       struct sched_config *sc, struct tide_err *err)
{
    const char *const *v = f->value;
    long long n;
    if (v[OPT_LISTEN] && config_host_port("listen", "--listen", v[OPT_LISTEN], cfg->listen_host,
                                          sizeof cfg->listen_host, &cfg->listen_port, err))
        return TIDE_EINVAL;
    if (v[OPT_AGENT_LISTEN]) {
        cfg->agent_listen = true;
        if (config_host_port("agent_listen", "--agent-listen", v[OPT_AGENT_LISTEN],
                             cfg->agent_listen_host, sizeof cfg->agent_listen_host,
                             &cfg->agent_listen_port, err))
            return TIDE_EINVAL;
    }
    if (cfg->agent_listen && cfg->agent_listen_port && cfg->agent_listen_port == cfg->listen_port)
        return tide_err_set(err, TIDE_EINVAL, "agent_listen",
                            "agent_listen: port %d is the --listen port; the agent listener "
                            "needs a port of its own", cfg->agent_listen_port);
    if (v[OPT_TLS_CERT] &&
        apply_path("--tls-cert", v[OPT_TLS_CERT], cfg->tls_cert, sizeof cfg->tls_cert, err))
        return TIDE_EINVAL;
    if (v[OPT_TLS_KEY] &&
        apply_path("--tls-key", v[OPT_TLS_KEY], cfg->tls_key, sizeof cfg->tls_key, err))
        return TIDE_EINVAL;
    if (v[OPT_TLS_CLIENT_CA] && apply_path("--tls-client-ca", v[OPT_TLS_CLIENT_CA],
                                           cfg->tls_client_ca, sizeof cfg->tls_client_ca, err))
        return TIDE_EINVAL;
    if (f->plain)
        cfg->insecure_plain_http = true;
    if (v[OPT_ADVERTISE]) {
        if (lead_check_url(v[OPT_ADVERTISE], err) != 0)
            return TIDE_EINVAL;
        snprintf(cfg->advertise_url, sizeof cfg->advertise_url, "%s", v[OPT_ADVERTISE]);
    }
    if (v[OPT_AGENT_SERVERS]) {
        const char *a = v[OPT_AGENT_SERVERS];
        if (!*a || strlen(a) >= sizeof cfg->agent_servers ||
            (strncmp(a, "http://", 7) && strncmp(a, "https://", 8)))
            return tide_err_set(err, TIDE_EINVAL, "agent_servers",
                                "--agent-servers '%s': expected URL[,URL...] (http:// or "
                                "https://), under %zu characters", a, sizeof cfg->agent_servers);
        snprintf(cfg->agent_servers, sizeof cfg->agent_servers, "%s", a);
    }
    if (f->no_shared_join)
        cfg->shared_join_token_off = true;
    if (f->cn_is_node)
        cfg->tls_client_cn_is_node = true;
    /* Pools' providers start their nodes' agents with DATA/join.token. */
    if (cfg->shared_join_token_off && cfg->npools)
        return tide_err_set(err, TIDE_EINVAL, "shared_join_token",
                            "shared_join_token: pools start their nodes with the shared join "
                            "token, so it cannot be turned off while pools are configured");
    if (v[OPT_DATA]) {
        if (strlen(v[OPT_DATA]) >= sizeof cfg->data_dir - 64)
            return tide_err_set(err, TIDE_EINVAL, "data", "--data: path too long");
        snprintf(cfg->data_dir, sizeof cfg->data_dir, "%s", v[OPT_DATA]);
    }
    if (v[OPT_STORE]) {
        if (!v[OPT_STORE][0] || strlen(v[OPT_STORE]) >= sizeof cfg->store)
            return tide_err_set(err, TIDE_EINVAL, "store", "--store: %s",
                                v[OPT_STORE][0] ? "URL or path too long"
                                                : "expected a postgres:// URL or a SQLite path");
        snprintf(cfg->store, sizeof cfg->store, "%s", v[OPT_STORE]);
    }
    if (v[OPT_NODE_TIMEOUT]) {
        if (cli_parse_range("--node-timeout-ms", v[OPT_NODE_TIMEOUT], 100, 86400000, &n, err))
            return TIDE_EINVAL;
        cfg->node_timeout_ms = n;
    }
    if (v[OPT_HEARTBEAT]) {
        if (cli_parse_range("--heartbeat-ms", v[OPT_HEARTBEAT], 50, 600000, &n, err))
            return TIDE_EINVAL;
        cfg->heartbeat_interval_ms = (int)n;
    }
    if (v[OPT_KILL_GRACE]) {
        if (cli_parse_range("--kill-grace-s", v[OPT_KILL_GRACE], 0, 3600, &n, err))
            return TIDE_EINVAL;
        cfg->kill_grace_s = (int)n;
    }
    if (v[OPT_PLACEMENT]) {
        sc->placement = placement_by_name(v[OPT_PLACEMENT]);
        if (!sc->placement)
            return tide_err_set(err, TIDE_EINVAL, "placement",
                                "--placement: unknown strategy '%s' (known: %s)", v[OPT_PLACEMENT],
                                placement_names());
    }
    if (v[OPT_MEM_PCT]) {
        if (cli_parse_range("--max-gpu-mem-pct", v[OPT_MEM_PCT], 0, 100, &n, err))
            return TIDE_EINVAL;
        sc->placement_cfg.max_gpu_memory_used_pct = (int)n;
    }
    if (v[OPT_UTIL_PCT]) {
        if (cli_parse_range("--max-gpu-util-pct", v[OPT_UTIL_PCT], 0, 100, &n, err))
            return TIDE_EINVAL;
        sc->placement_cfg.max_gpu_utilization_pct = (int)n;
    }
    return 0;
}

/* --check-config: what the server would run with, on stdout. */
static void print_check(const struct server_flags *f, const struct server_config *cfg,
                        const struct sched_config *sc)
{
    printf("tide server: %s: ok\n", f->value[OPT_CONFIG] ? f->value[OPT_CONFIG] : "(no --config)");
    printf("listen %s://%s:%d, data %s, policy %s, placement %s, backfill %s\n",
           cfg->tls_cert[0] ? "https" : "http", cfg->listen_host, cfg->listen_port, cfg->data_dir,
           sc->order->name, sc->placement->name, sc->backfill ? "on" : "off");
    char store[512];
    store_url_shown(cfg->store[0] ? cfg->store : "DATA/tide.db", store, sizeof store);
    printf("store %s\n", store);
    if (cfg->agent_listen)
        printf("agents on %s://%s:%d\n", cfg->tls_cert[0] ? "https" : "http",
               cfg->agent_listen_host, cfg->agent_listen_port);
    if (cfg->shared_join_token_off)
        printf("shared join token off: only node-bound join tokens register nodes\n");
    printf("%d queues, %d projects with fair share, %d with budgets, %d pools\n",
           cfg->queues.count, cfg->fairshare.count, cfg->budgets.count, cfg->npools);
    for (int i = 0; i < cfg->npools; i++) {
        const struct pool *p = &cfg->pools[i];
        printf("pool %s: %d..%d nodes of %d x %s (%lld MiB), %s, %.6g per node-hour\n", p->name,
               p->min_nodes, p->max_nodes, p->gpus_per_node, p->gpu_model,
               (long long)p->gpu_memory_mib, billing_kind_name(p->billing),
               (double)p->price_per_node_hour_micros / 1e6);
    }
}

/* DATA is 0711 so that a job's user can pass through to its own directory
 * under DATA/checkpoints (handed to it by an agent on this machine) while
 * everything else the server writes there is owner-only (umask 077): the
 * database, tokens and logs cannot be listed or read by jobs. */
static int data_dir_modes(const char *dir, struct tide_err *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tide.db", dir);
    if (chmod(path, 0600) != 0 && errno != ENOENT) /* made before the umask */
        return tide_err_set(err, TIDE_EIO, "data", "chmod %s: %s", path, strerror(errno));
    /* a token file restored or copied with looser modes could be read by
     * any job on this machine (DATA is 0711): owner-only, and said */
    static const char *const tokens[] = {"admin.token", "join.token"};
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, tokens[i]);
        int e = fs_make_private(path);
        if (e)
            return tide_err_set(err, TIDE_EIO, "data", "chmod %s: %s", path, strerror(-e));
    }
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    int rc = fs_mkdir_p(path, 0711);
    if (rc || chmod(path, 0711) != 0 || chmod(dir, 0711) != 0)
        return tide_err_set(err, TIDE_EIO, "data", "cannot set the modes of %s: %s", dir,
                            strerror(rc ? -rc : errno));
    return 0;
}

static int server_open(struct server *srv, struct tide_err *err)
{
    umask(077);
    int rc = fs_mkdir_p(srv->cfg.data_dir, 0700);
    if (rc)
        return tide_err_set(err, TIDE_EIO, "data", "cannot create %s: %s", srv->cfg.data_dir,
                            strerror(-rc));
    if ((rc = data_dir_modes(srv->cfg.data_dir, err)) != 0)
        return rc;
    /* Agents run elsewhere: paths handed to them (checkpoints) must be absolute. */
    char absolute[PATH_MAX];
    if (!realpath(srv->cfg.data_dir, absolute) || strlen(absolute) >= sizeof srv->cfg.data_dir - 64)
        return tide_err_set(err, TIDE_EIO, "data", "cannot resolve %s", srv->cfg.data_dir);
    memcpy(srv->cfg.data_dir, absolute, strlen(absolute) + 1); /* length checked above */
    rc = data_lock_acquire(srv->cfg.data_dir, &srv->data_lock_fd, err);
    if (rc)
        return rc;
    char path[1024];
    /* checkpoint directories made between waves of starts (dir_spares.h) */
    snprintf(path, sizeof path, "%s/checkpoints", srv->cfg.data_dir);
    srv->checkpoint_spares = dir_spares_create(path, SERVER_CHECKPOINT_SPARES, 0700);
    if (!srv->checkpoint_spares)
        log_warn("no spare checkpoint directories (%s): each start makes its own",
                 strerror(errno));
    snprintf(path, sizeof path, "%s/tide.db", srv->cfg.data_dir);
    return store_open(srv->cfg.store[0] ? srv->cfg.store : path, &srv->store, err);
}

/* Once leading: what a start (or a restart after kill -9) loads. */
static int server_load(struct server *srv, struct tide_err *err)
{
    int rc = auth_bootstrap(srv, err);
    if (!rc)
        rc = server_reload_cluster(srv, clock_now_ms(), err);
    if (!rc)
        rc = usage_meter_start(srv, err);
    /* Before the first request and scheduling pass: a hard cap reached
     * today holds and rejects from the start, pools or none. */
    if (!rc && srv->cfg.budgets.count)
        rc = store_budgets_load(srv->store, &srv->cfg.budgets, err);
    if (!rc) /* yesterday's cap must not hold today: without pools, no tick rolls it */
        budget_roll_all(&srv->cfg.budgets, clock_now_ms());
    if (!rc)
        eta_refresh_seed(srv);
    return rc;
}

/* The main listener and, with --agent-listen, the agent one. */
static int http_start_all(struct server *srv, struct MHD_Daemon **daemon,
                          struct MHD_Daemon **agent_daemon, struct tide_err *err)
{
    if (http_start(srv, HTTP_MAIN, daemon, err) != 0)
        return TIDE_EIO;
    if (srv->cfg.agent_listen && http_start(srv, HTTP_AGENT, agent_daemon, err) != 0)
        return TIDE_EIO;
    return 0;
}

int server_main(int argc, char **argv)
{
    struct server srv;
    memset(&srv, 0, sizeof srv);
    snprintf(srv.cfg.listen_host, sizeof srv.cfg.listen_host, "127.0.0.1");
    srv.cfg.listen_port = 8080;
    snprintf(srv.cfg.data_dir, sizeof srv.cfg.data_dir, "tide-data");
    srv.cfg.node_timeout_ms = 30000;
    srv.cfg.heartbeat_interval_ms = 1000;
    srv.cfg.kill_grace_s = 10;
    srv.cfg.node_fault_limit = 3;
    srv.cfg.node_fault_window_s = 3600;
    srv.cfg.sched_interval_ms = 500;
    srv.cfg.retention_jobs_s = 30 * 86400;
    srv.cfg.retention_events_s = 30 * 86400;
    srv.cfg.retention_sweep_s = 60;
    queue_set_defaults(&srv.cfg.queues);
    fairshare_init(&srv.cfg.fairshare, 3600);
    struct sched_config sc;
    sched_config_defaults(&sc);
    struct server_flags flags;
    struct tide_err err;
    tide_err_clear(&err);
    if (read_flags(argc, argv, &flags, &err) < 0)
        return cli_usage_fail("server", &err);
    if (flags.help) {
        fputs(server_usage, stdout);
        return 0;
    }
    for (int i = 0; i < flags.nconfigs; i++)
        if (config_load(flags.configs[i], &srv.cfg, &sc, &err) != 0)
            return cli_input_fail("server", &err);
    if (apply_flags(&flags, &srv.cfg, &sc, &err) < 0)
        return cli_usage_fail("server", &err);
    /* TLS files and plain HTTP off loopback: refused before anything is created. */
    struct http_tls tls_check;
    if (http_tls_load(&srv.cfg, &tls_check, &err) != 0)
        return cli_usage_fail("server", &err);
    http_tls_release(&tls_check);
    if (flags.check) {
        print_check(&flags, &srv.cfg, &sc);
        return 0;
    }
    sc.node_timeout_ms = srv.cfg.node_timeout_ms;
    sc.queues = &srv.cfg.queues;
    sc.fairshare = srv.cfg.fairshare.count ? &srv.cfg.fairshare : NULL;
    sc.budgets = srv.cfg.budgets.count ? &srv.cfg.budgets : NULL;

    log_set_prefix("server");
    pthread_mutex_init(&srv.lock, NULL);
    auth_limit_init(&srv.auth_limit);
    auth_cache_init(&srv.auth_cache);
    auth_known_init(&srv.auth_known);
    /* monotonic: a step of the wall clock must not stall passes or node checks */
    if (clock_cond_init(&srv.wake, CLOCK_MONOTONIC) != 0 ||
        clock_cond_init(&srv.report_pass, CLOCK_MONOTONIC) != 0) {
        log_error("cannot set up the scheduler's condition");
        return 1;
    }
    if (wake_slots_init(&srv.agent_wake) != 0) {
        log_error("out of memory");
        return 1;
    }
    server_metrics_init(&srv.metrics);
    sched_init(&srv.sched, &sc);
    eta_plan_init(&srv.eta_plan);
    eta_plan_set_queues(&srv.eta_plan, sc.queues); /* the plan keeps the pass's caps */
    eta_estimator_init(&srv.eta_est, 0);
    cluster_init(&srv.cluster);
    srv.cluster.jobs_any_order = true; /* as server_reload_cluster says why */
    action_list_init(&srv.actions);
    signal(SIGPIPE, SIG_IGN);

    int exit_code = 1;
    struct MHD_Daemon *daemon = NULL, *agent_daemon = NULL;
    pthread_t sched_thread;
    bool sched_started = false;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char advertise[sizeof srv.cfg.advertise_url];
    snprintf(advertise, sizeof advertise, "%s://%s:%d", srv.cfg.tls_cert[0] ? "https" : "http",
             srv.cfg.listen_host, srv.cfg.listen_port);
    lead_init(&srv.lead, srv.cfg.advertise_url[0] ? srv.cfg.advertise_url : advertise);
    if (server_open(&srv, &err) != 0) {
        log_error("%s", err.message);
        goto out;
    }
    /* Leadership (docs/ha.md): granted at once (always with SQLite), the
     * server loads its state before it listens, as it always has; else it
     * listens as a follower, answering who leads, until the store grants. */
    int64_t epoch = 0;
    int lead = store_try_lead(srv.store, srv.lead.url, clock_now_ms(), &epoch, &err);
    if (lead < 0) {
        log_error("%s", err.message);
        goto out;
    }
    if (lead == 0) {
        if (http_start_all(&srv, &daemon, &agent_daemon, &err) != 0) {
            log_error("%s", err.message);
            goto out;
        }
        if (lead_acquire(&srv, &stop_requested) == 1) {
            exit_code = 0;
            goto out; /* stopped while following */
        }
    } else {
        srv.lead.role = LEAD_STARTING;
        srv.lead.epoch = epoch;
    }
    if (server_load(&srv, &err) != 0 || submit_batch_start(&srv, &err) != 0) {
        log_error("%s", err.message);
        goto out;
    }
    lead_set_leader(&srv.lead); /* requests are served from here on */
    if (!daemon && http_start_all(&srv, &daemon, &agent_daemon, &err) != 0) {
        log_error("%s", err.message);
        goto out;
    }
    if (sched_loop_start(&srv, &sched_thread) != 0) {
        log_error("cannot start the scheduler thread");
        goto out;
    }
    sched_started = true;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    char store_shown[512] = "";
    if (srv.cfg.store[0]) /* the password masked */
        store_url_shown(srv.cfg.store, store_shown, sizeof store_shown);
    log_info("listening on %s://%s:%u%s (data in %s%s%s, %zu nodes and %zu unfinished jobs loaded)",
             srv.cfg.tls_cert[0] ? "https" : "http", srv.cfg.listen_host, info ? info->port : (unsigned)srv.cfg.listen_port,
             srv.cfg.tls_client_ca[0] ? ", agents need a client certificate" : "", srv.cfg.data_dir,
             store_shown[0] ? ", store " : "", store_shown, srv.cluster.nnodes, srv.cluster.njobs);
    int agent_port = info ? (int)info->port : srv.cfg.listen_port;
    if (agent_daemon) {
        agent_port = srv.cfg.agent_listen_port;
        log_info("agents on %s://%s:%d (the agent protocol is served only there)",
                 srv.cfg.tls_cert[0] ? "https" : "http", srv.cfg.agent_listen_host, agent_port);
    }
    if (retention_start(&srv, &err) != 0 || pool_loop_start(&srv, agent_port, &err) != 0) {
        log_error("%s", err.message);
        exit_code = 1;
        goto out;
    }
    log_info("leader (epoch %lld, advertised as %s)", (long long)srv.lead.epoch, srv.lead.url);

    /* Polling the flag (not pause()) cannot miss a signal that lands just
     * before the wait; the same poll notices a lost store connection. */
    int64_t next_check = clock_mono_ms() + LEAD_CHECK_MS;
    while (!stop_requested) {
        usleep(50 * 1000);
        char why[STORE_LEADER_URL_MAX + 160];
        if (clock_mono_ms() < next_check)
            continue;
        next_check = clock_mono_ms() + LEAD_CHECK_MS;
        if (lead_deposed(&srv, why, sizeof why)) {
            /* Another server may lead already: nothing more may be decided
             * or answered here, and shutting down cleanly would write. */
            log_error("%s: stopping at once; restart this server to have it follow", why);
            fflush(NULL);
            _exit(3);
        }
    }
    log_info("stopping");
    exit_code = 0;

out:
    srv.stopping = 1;
    pthread_mutex_lock(&srv.lock);
    agent_wake_all(&srv); /* parked waits answer now, or MHD_stop_daemon waits for them */
    pthread_mutex_unlock(&srv.lock);
    if (agent_daemon)
        MHD_stop_daemon(agent_daemon);
    if (daemon)
        MHD_stop_daemon(daemon);
    submit_batch_stop(&srv); /* no HTTP thread submits any more */
    retention_stop(&srv);
    pool_loop_stop(&srv);
    dir_spares_destroy(srv.checkpoint_spares); /* no HTTP thread takes one any more */
    if (sched_started) {
        pthread_mutex_lock(&srv.lock);
        pthread_cond_signal(&srv.wake);
        pthread_mutex_unlock(&srv.lock);
        pthread_join(sched_thread, NULL);
    }
    usage_meter_stop(&srv);
    store_close(srv.store);
    if (srv.data_lock_fd > 0)
        close(srv.data_lock_fd);
    sched_release(&srv.sched);
    eta_plan_release(&srv.eta_plan);
    eta_estimator_release(&srv.eta_est);
    auth_limit_release(&srv.auth_limit);
    auth_cache_release(&srv.auth_cache);
    auth_known_release(&srv.auth_known);
    cluster_release(&srv.cluster);
    agent_wake_release(&srv);
    pthread_cond_destroy(&srv.report_pass);
    action_list_release(&srv.actions);
    server_metrics_release(&srv.metrics);
    lead_release(&srv.lead);
    return exit_code;
}
