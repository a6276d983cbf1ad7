/*
 * `tide server`: opens the store, creates the tokens on first start,
 * rebuilds the scheduler's cache from the database, then serves the API
 * and runs the scheduler until SIGINT/SIGTERM.
 */
#include <getopt.h>
#include <limits.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/roles.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "server/config.h"
#include "server/data_lock.h"
#include "server/pool_loop.h"
#include "server/retention.h"
#include "server/submit_batch.h"
#include "store/store_idempotency.h"
#include "store/store_tokens.h"
#include "server/server.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tide server [options]\n\n"
            "  --listen HOST:PORT       address to serve on (default 127.0.0.1:8080)\n"
            "  --data DIR               state directory: database, tokens, logs (default ./tide-data)\n"
            "  --config FILE            tide.yaml with server and scheduler settings (flags win)\n"
            "  --node-timeout-ms N      declare a node lost after N ms without heartbeat (default 30000)\n"
            "  --heartbeat-ms N         heartbeat interval told to agents (default 1000)\n"
            "  --kill-grace-s N         SIGTERM→SIGKILL grace for stopped tasks (default 10)\n"
            "  --placement NAME         placement strategy (default binpack)\n"
            "  --max-gpu-mem-pct N      skip GPUs with more memory in use (default 80)\n"
            "  --max-gpu-util-pct N     skip GPUs busier than this (default 90)\n"
            "  --help                   this text\n\n"
            "On first start the server writes DIR/admin.token and DIR/join.token (mode 0600).\n");
}

static int parse_int_flag(const char *flag, const char *v, long lo, long hi, long *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < lo || n > hi) {
        fprintf(stderr, "tide server: %s: must be an integer from %ld to %ld, got '%s'\n", flag, lo,
                hi, v);
        return -1;
    }
    *out = n;
    return 0;
}

static int parse_listen(const char *v, struct server_config *cfg)
{
    const char *colon = strrchr(v, ':');
    long port;
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof cfg->listen_host ||
        parse_int_flag("--listen", colon + 1, 0, 65535, &port) != 0) {
        fprintf(stderr, "tide server: --listen: expected HOST:PORT, got '%s'\n", v);
        return -1;
    }
    memcpy(cfg->listen_host, v, (size_t)(colon - v));
    cfg->listen_host[colon - v] = '\0';
    if (!strcmp(cfg->listen_host, "localhost"))
        snprintf(cfg->listen_host, sizeof cfg->listen_host, "127.0.0.1");
    cfg->listen_port = (int)port;
    return 0;
}

static int parse_args(int argc, char **argv, struct server_config *cfg, struct sched_config *sc)
{
    static const struct option options[] = {
        {"listen", required_argument, 0, 'l'},       {"data", required_argument, 0, 'd'},
        {"node-timeout-ms", required_argument, 0, 't'}, {"heartbeat-ms", required_argument, 0, 'b'},
        {"kill-grace-s", required_argument, 0, 'g'}, {"placement", required_argument, 0, 'p'},
        {"max-gpu-mem-pct", required_argument, 0, 'm'}, {"max-gpu-util-pct", required_argument, 0, 'u'},
        {"config", required_argument, 0, 'c'},       {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    long n;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (parse_listen(optarg, cfg))
                return 2;
            break;
        case 'd':
            if (strlen(optarg) >= sizeof cfg->data_dir - 64) {
                fprintf(stderr, "tide server: --data: path too long\n");
                return 2;
            }
            snprintf(cfg->data_dir, sizeof cfg->data_dir, "%s", optarg);
            break;
        case 't':
            if (parse_int_flag("--node-timeout-ms", optarg, 100, 86400000, &n))
                return 2;
            cfg->node_timeout_ms = n;
            break;
        case 'b':
            if (parse_int_flag("--heartbeat-ms", optarg, 50, 600000, &n))
                return 2;
            cfg->heartbeat_interval_ms = (int)n;
            break;
        case 'g':
            if (parse_int_flag("--kill-grace-s", optarg, 0, 3600, &n))
                return 2;
            cfg->kill_grace_s = (int)n;
            break;
        case 'p':
            sc->placement = placement_by_name(optarg);
            if (!sc->placement) {
                fprintf(stderr, "tide server: --placement: unknown strategy '%s' (known: %s)\n",
                        optarg, placement_names());
                return 2;
            }
            break;
        case 'm':
            if (parse_int_flag("--max-gpu-mem-pct", optarg, 0, 100, &n))
                return 2;
            sc->placement_cfg.max_gpu_memory_used_pct = (int)n;
            break;
        case 'u':
            if (parse_int_flag("--max-gpu-util-pct", optarg, 0, 100, &n))
                return 2;
            sc->placement_cfg.max_gpu_utilization_pct = (int)n;
            break;
        case 'c':
            break; /* read before the other flags, in config_from_args() */
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tide server: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    return -1;
}

/* Applies --config FILE (if given) before the flags, so that flags win. */
static int config_from_args(int argc, char **argv, struct server_config *cfg,
                            struct sched_config *sc)
{
    for (int i = 1; i < argc; i++) {
        const char *path = NULL;
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            path = argv[i + 1];
        else if (!strncmp(argv[i], "--config=", 9))
            path = argv[i] + 9;
        if (!path)
            continue;
        struct tide_err err;
        tide_err_clear(&err);
        if (config_load(path, cfg, sc, &err) != 0) {
            fprintf(stderr, "tide server: %s\n", err.message);
            return 2;
        }
    }
    return -1;
}

static int server_open(struct server *srv, struct tide_err *err)
{
    int rc = fs_mkdir_p(srv->cfg.data_dir, 0700);
    if (rc)
        return tide_err_set(err, TIDE_EIO, "data", "cannot create %s: %s", srv->cfg.data_dir,
                            strerror(-rc));
    /* Agents run elsewhere: paths handed to them (checkpoints) must be absolute. */
    char absolute[PATH_MAX];
    if (!realpath(srv->cfg.data_dir, absolute) || strlen(absolute) >= sizeof srv->cfg.data_dir - 64)
        return tide_err_set(err, TIDE_EIO, "data", "cannot resolve %s", srv->cfg.data_dir);
    memcpy(srv->cfg.data_dir, absolute, strlen(absolute) + 1); /* length checked above */
    rc = data_lock_acquire(srv->cfg.data_dir, &srv->data_lock_fd, err);
    if (rc)
        return rc;
    char path[1024];
    snprintf(path, sizeof path, "%s/tide.db", srv->cfg.data_dir);
    rc = store_open_sqlite(path, &srv->store, err);
    if (!rc)
        rc = store_idempotency_init(srv->store, err);
    if (!rc)
        rc = store_tokens_init(srv->store, err);
    if (!rc)
        rc = auth_bootstrap(srv, err);
    if (!rc)
        rc = server_reload_cluster(srv, clock_now_ms(), err);
    return rc;
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
    srv.cfg.sched_interval_ms = 500;
    srv.cfg.retention_jobs_s = 30 * 86400;
    srv.cfg.retention_events_s = 30 * 86400;
    srv.cfg.retention_sweep_s = 60;
    queue_set_defaults(&srv.cfg.queues);
    fairshare_init(&srv.cfg.fairshare, 3600);
    struct sched_config sc;
    sched_config_defaults(&sc);
    int usage_rc = config_from_args(argc, argv, &srv.cfg, &sc);
    if (usage_rc >= 0)
        return usage_rc;
    usage_rc = parse_args(argc, argv, &srv.cfg, &sc);
    if (usage_rc >= 0)
        return usage_rc;
    sc.node_timeout_ms = srv.cfg.node_timeout_ms;
    sc.queues = &srv.cfg.queues;
    sc.fairshare = srv.cfg.fairshare.count ? &srv.cfg.fairshare : NULL;
    sc.budgets = srv.cfg.budgets.count ? &srv.cfg.budgets : NULL;

    log_set_prefix("server");
    pthread_mutex_init(&srv.lock, NULL);
    auth_limit_init(&srv.auth_limit);
    pthread_cond_init(&srv.wake, NULL);
    sched_init(&srv.sched, &sc);
    cluster_init(&srv.cluster);
    action_list_init(&srv.actions);
    signal(SIGPIPE, SIG_IGN);

    struct tide_err err;
    tide_err_clear(&err);
    int exit_code = 1;
    struct MHD_Daemon *daemon = NULL;
    pthread_t sched_thread;
    bool sched_started = false;
    if (server_open(&srv, &err) != 0 || submit_batch_start(&srv, &err) != 0 ||
        http_start(&srv, &daemon, &err) != 0) {
        log_error("%s", err.message);
        goto out;
    }
    if (sched_loop_start(&srv, &sched_thread) != 0) {
        log_error("cannot start the scheduler thread");
        goto out;
    }
    sched_started = true;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    log_info("listening on http://%s:%u (data in %s, %zu nodes and %zu unfinished jobs loaded)",
             srv.cfg.listen_host, info ? info->port : (unsigned)srv.cfg.listen_port,
             srv.cfg.data_dir, srv.cluster.nnodes, srv.cluster.njobs);
    if (retention_start(&srv, &err) != 0 ||
        pool_loop_start(&srv, info ? (int)info->port : srv.cfg.listen_port, &err) != 0) {
        log_error("%s", err.message);
        exit_code = 1;
        goto out;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* Polling the flag (not pause()) cannot miss a signal that lands just
     * before the wait. */
    while (!stop_requested)
        usleep(100 * 1000);
    log_info("stopping");
    exit_code = 0;

out:
    srv.stopping = 1;
    if (daemon)
        MHD_stop_daemon(daemon);
    submit_batch_stop(&srv); /* no HTTP thread submits any more */
    retention_stop(&srv);
    pool_loop_stop(&srv);
    if (sched_started) {
        pthread_mutex_lock(&srv.lock);
        pthread_cond_signal(&srv.wake);
        pthread_mutex_unlock(&srv.lock);
        pthread_join(sched_thread, NULL);
    }
    store_close(srv.store);
    if (srv.data_lock_fd > 0)
        close(srv.data_lock_fd);
    sched_release(&srv.sched);
    auth_limit_release(&srv.auth_limit);
    cluster_release(&srv.cluster);
    action_list_release(&srv.actions);
    return exit_code;
}
