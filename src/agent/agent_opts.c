/* Parsing `tide agent` flags (agent_opts.h) with the reader every role
 * uses (cli/args.h), so its errors read like the others'. */
#include "agent/agent_opts.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_servers.h"
#include "agent/job_dir_sweep.h"
#include "cli/args.h"
#include "common/fsutil.h"

#define TOKEN_FILE_MAX 4096
#define AGENT_MAX_PREWARM 64

void agent_opts_usage(FILE *out)
{
    fprintf(out, "usage: tide agent --server URL[,URL...] (--token TOKEN | --token-file PATH)\n"
                 "                  [options]\n"
                 "\n"
                 "  --server URL[,URL...]  tide server (or TIDE_SERVER); several servers that\n"
                 "                      share one store (docs/ha.md): the agent follows the\n"
                 "                      leader among them\n"
                 "  --token TOKEN       join token (or TIDE_JOIN_TOKEN); optional once the\n"
                 "                      node is registered (WORK/node.json); shows in ps:\n"
                 "                      prefer --token-file or TIDE_JOIN_TOKEN\n"
                 "  --token-file PATH   read the join token from a file\n"
                 "  --name NAME         node name (default: the host name)\n"
                 "  --work DIR          work directory (default ./tide-agent)\n"
                 "  --pool NAME         elastic pool this node belongs to (set by providers)\n"
                 "  --fake-gpus SPEC    fake GPUs, e.g. 4xH200:141GB or 2xA100:80GB,1xT4:16GB\n"
                 "                      (default: real GPUs through NVML); MIG instances per\n"
                 "                      GPU with :mig=PROFILE*COUNT[+...], e.g.\n"
                 "                      1xA100:80GB:mig=1g.10gb*7 or 1xA100:80GB:mig=3g.40gb*2\n"
                 "  --heartbeat-ms N    heartbeat interval (default: the server's, else 1000)\n"
                 "  --kill-grace-s N    SIGTERM to SIGKILL delay when stopping tasks (default 10)\n"
                 "  --job-dir-keep-s N  remove a job's directory (WORK/jobs/ID) and what its\n"
                 "                      tasks left there N s after its last task here ended\n"
                 "                      (default 86400, a day; 0: at once; -1: never)\n"
                 "  --max-log-mib N     kill a task whose output log grows past N MiB, so one\n"
                 "                      job cannot fill the node's disk (default 10240; 0: no cap)\n"
                 "  --cpus N            CPUs to report (default: online CPUs)\n"
                 "  --memory-mib N      memory to report (default: physical memory)\n"
                 "  --ca FILE           PEM CA (or self-signed certificate) that an https\n"
                 "                      --server must be signed by (or TIDE_CA; default: the\n"
                 "                      system's CAs)\n"
                 "  --tls-cert FILE     client certificate for a server that requires one\n"
                 "                      (or TIDE_TLS_CERT)\n"
                 "  --tls-key FILE      ... and its key (or TIDE_TLS_KEY)\n"
                 "  --fake-fault-file PATH  faults to inject into fake GPUs, one a line:\n"
                 "                      'INDEX xid N', 'INDEX ecc N', 'INDEX temp C' or\n"
                 "                      'INDEX lost' (docs/health.md)\n"
                 "  --health-command CMD  health probe run by sh at start and periodically;\n"
                 "                      a node whose probe fails gets no new work\n"
                 "  --health-interval-s N  between probes (default 60)\n"
                 "  --health-timeout-s N   a probe running longer fails (default 30)\n"
                 "  --job-user NAME     user jobs run as when the agent is root (default:\n"
                 "                      tide-job where that user exists, else nobody)\n"
                 "  --allow-users LIST  comma-separated users a job may ask for (user:)\n"
                 "  --allow-root-jobs   let jobs run as root (--job-user root, or user: root\n"
                 "                      in --allow-users); refused otherwise\n"
                 "  --container-runtime PROG  podman or docker (or a path to one) for jobs with\n"
                 "                      an image (default: podman, else docker, if installed)\n"
                 "  --prewarm-image IMAGE  pull IMAGE at start unless held, before registering\n"
                 "                      (repeatable; any reference the runtime pulls, e.g.\n"
                 "                      docker.io/library/python:3.12 or docker-archive:/x.tar)\n"
                 "  --help              this text\n");
}

static int set_str(char **dst, const char *v, struct tide_err *err)
{
    char *s = strdup(v);
    if (!s)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    free(*dst);
    *dst = s;
    return 0;
}

static int add_prewarm(struct agent_opts *o, const char *image, struct tide_err *err)
{
    if (!*image || image[0] == '-')
        return tide_err_set(err, TIDE_EINVAL, "--prewarm-image",
                            "--prewarm-image '%s': must be an image reference", image);
    if (o->nprewarm >= AGENT_MAX_PREWARM)
        return tide_err_set(err, TIDE_EINVAL, "--prewarm-image", "--prewarm-image: at most %d",
                            AGENT_MAX_PREWARM);
    char **list = realloc(o->prewarm_images, (o->nprewarm + 1) * sizeof *list);
    if (!list)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    o->prewarm_images = list;
    if (!(list[o->nprewarm] = strdup(image)))
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    o->nprewarm++;
    return 0;
}

static int read_token_file(const char *path, char **dst, struct tide_err *err)
{
    char *text = NULL;
    int e = fs_read_file(path, TOKEN_FILE_MAX, &text, NULL);
    if (e != 0)
        return tide_err_set(err, TIDE_EINVAL, "--token-file", "--token-file %s: %s", path,
                            strerror(-e));
    size_t n = strlen(text);
    while (n && isspace((unsigned char)text[n - 1]))
        text[--n] = '\0';
    if (n == 0) {
        free(text);
        return tide_err_set(err, TIDE_EINVAL, "--token-file", "--token-file %s is empty", path);
    }
    free(*dst);
    *dst = text;
    return 0;
}

/* Splits o->server_url at commas into o->server_urls, each without a
 * trailing '/', refusing empty entries, non-http(s) ones and repeats. */
static int split_servers(struct agent_opts *o, struct tide_err *err)
{
    const char *p = o->server_url;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        while (n > 1 && p[n - 1] == '/')
            n--;
        if (n == 0)
            return tide_err_set(err, TIDE_EINVAL, "--server",
                                "--server '%s': an empty URL in the list", o->server_url);
        if (strncmp(p, "http://", 7) && strncmp(p, "https://", 8))
            return tide_err_set(err, TIDE_EINVAL, "--server",
                                "--server '%.*s': must start with http:// or https://", (int)n, p);
        if (o->nservers == AGENT_SERVERS_MAX)
            return tide_err_set(err, TIDE_EINVAL, "--server", "--server: at most %d URLs",
                                AGENT_SERVERS_MAX);
        char *url = strndup(p, n);
        char **list = url ? realloc(o->server_urls, (o->nservers + 1) * sizeof *list) : NULL;
        if (!list) {
            free(url);
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        }
        o->server_urls = list;
        for (size_t i = 0; i < o->nservers; i++)
            if (!strcmp(list[i], url)) {
                int rc = tide_err_set(err, TIDE_EINVAL, "--server",
                                      "--server: %s is listed twice", url);
                free(url);
                return rc;
            }
        list[o->nservers++] = url;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

static int check_name(const char *name, struct tide_err *err)
{
    size_t n = strlen(name);
    if (n == 0 || n > AGENT_NAME_MAX)
        return tide_err_set(err, TIDE_EINVAL, "--name", "--name must be 1..%d characters",
                            AGENT_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-')
            return tide_err_set(err, TIDE_EINVAL, "--name",
                                "--name '%s': only letters, digits, '.', '_' and '-'", name);
    }
    return 0;
}

/* A user name, or with list a comma-separated list of them: the letters
 * POSIX names use, so nothing odd reaches getpwnam. */
static int check_user_list(const char *flag, const char *v, bool list, struct tide_err *err)
{
    size_t len = 0;
    for (const char *p = v;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\0' || (list && c == ',')) {
            if (len == 0 || len > 32)
                return tide_err_set(err, TIDE_EINVAL, flag,
                                    "%s '%s': each user name must be 1..32 characters", flag, v);
            if (!c)
                return 0;
            len = 0;
            continue;
        }
        if (!isalnum(c) && c != '_' && c != '-' && c != '.')
            return tide_err_set(err, TIDE_EINVAL, flag,
                                "%s '%s': user names have only letters, digits, '.', '_', '-'%s",
                                flag, v, list ? " (comma-separated)" : "");
        len++;
    }
}

static const struct cli_opt agent_flags[] = {
    {"--server", CLI_OPT_VALUE, 1},       {"--token", CLI_OPT_VALUE, 2},
    {"--token-file", CLI_OPT_VALUE, 3},   {"--name", CLI_OPT_VALUE, 4},
    {"--work", CLI_OPT_VALUE, 5},         {"--fake-gpus", CLI_OPT_VALUE, 6},
    {"--heartbeat-ms", CLI_OPT_VALUE, 7}, {"--kill-grace-s", CLI_OPT_VALUE, 8},
    {"--cpus", CLI_OPT_VALUE, 9},         {"--memory-mib", CLI_OPT_VALUE, 10},
    {"--pool", CLI_OPT_VALUE, 11},        {"--ca", CLI_OPT_VALUE, 12},
    {"--tls-cert", CLI_OPT_VALUE, 13},    {"--tls-key", CLI_OPT_VALUE, 14},
    {"--fake-fault-file", CLI_OPT_VALUE, 15}, {"--health-command", CLI_OPT_VALUE, 16},
    {"--health-interval-s", CLI_OPT_VALUE, 17}, {"--health-timeout-s", CLI_OPT_VALUE, 18},
    {"--job-user", CLI_OPT_VALUE, 19},    {"--allow-users", CLI_OPT_VALUE, 20},
    {"--allow-root-jobs", CLI_OPT_FLAG, 21}, {"--container-runtime", CLI_OPT_VALUE, 22},
    {"--prewarm-image", CLI_OPT_VALUE, 23}, {"--job-dir-keep-s", CLI_OPT_VALUE, 24},
    {"--max-log-mib", CLI_OPT_VALUE, 25},
    {"--help", CLI_OPT_FLAG, CLI_ID_HELP},
    {"-h", CLI_OPT_FLAG, CLI_ID_HELP},    {NULL, 0, 0},
};

/* One flag with its value v. */
static int apply_flag(struct agent_opts *o, const char *flag, const char *v, struct tide_err *err)
{
    long long n;
    int rc;
    if (!strcmp(flag, "--server"))
        return set_str(&o->server_url, v, err);
    if (!strcmp(flag, "--token")) {
        int rc = set_str(&o->join_token, v, err);
        if (rc == 0)
            cli_scrub_secret("tide agent", "--token", v);
        return rc;
    }
    if (!strcmp(flag, "--token-file"))
        return read_token_file(v, &o->join_token, err);
    if (!strcmp(flag, "--name"))
        return set_str(&o->name, v, err);
    if (!strcmp(flag, "--work"))
        return set_str(&o->work_dir, v, err);
    if (!strcmp(flag, "--fake-gpus"))
        return set_str(&o->fake_gpus, v, err);
    if (!strcmp(flag, "--pool"))
        return set_str(&o->pool, v, err);
    if (!strcmp(flag, "--ca"))
        return set_str(&o->ca, v, err);
    if (!strcmp(flag, "--tls-cert"))
        return set_str(&o->tls_cert, v, err);
    if (!strcmp(flag, "--tls-key"))
        return set_str(&o->tls_key, v, err);
    if (!strcmp(flag, "--fake-fault-file"))
        return set_str(&o->fake_fault_file, v, err);
    if (!strcmp(flag, "--health-command")) {
        if (!*v)
            return tide_err_set(err, TIDE_EINVAL, flag, "--health-command must not be empty");
        return set_str(&o->health_command, v, err);
    }
    if (!strcmp(flag, "--health-interval-s")) {
        if ((rc = cli_parse_range(flag, v, 1, 86400, &n, err)) == 0)
            o->health_interval_s = (int)n;
        return rc;
    }
    if (!strcmp(flag, "--health-timeout-s")) {
        if ((rc = cli_parse_range(flag, v, 1, 3600, &n, err)) == 0)
            o->health_timeout_s = (int)n;
        return rc;
    }
    if (!strcmp(flag, "--job-user"))
        return check_user_list(flag, v, false, err) ? TIDE_EINVAL : set_str(&o->job_user, v, err);
    if (!strcmp(flag, "--allow-users"))
        return check_user_list(flag, v, true, err) ? TIDE_EINVAL
                                                   : set_str(&o->allow_users, v, err);
    if (!strcmp(flag, "--container-runtime")) {
        if (!*v)
            return tide_err_set(err, TIDE_EINVAL, flag, "%s must not be empty", flag);
        return set_str(&o->container_runtime, v, err);
    }
    if (!strcmp(flag, "--prewarm-image"))
        return add_prewarm(o, v, err);
    if (!strcmp(flag, "--heartbeat-ms")) {
        if ((rc = cli_parse_range(flag, v, 10, 3600000, &n, err)) == 0)
            o->heartbeat_ms = (int)n;
        return rc;
    }
    if (!strcmp(flag, "--kill-grace-s")) {
        if ((rc = cli_parse_range(flag, v, 0, 86400, &n, err)) == 0)
            o->kill_grace_s = (int)n;
        return rc;
    }
    if (!strcmp(flag, "--max-log-mib")) {
        if ((rc = cli_parse_range(flag, v, 0, 1LL << 30, &n, err)) == 0)
            o->max_log_mib = n;
        return rc;
    }
    if (!strcmp(flag, "--job-dir-keep-s")) {
        if ((rc = cli_parse_range(flag, v, -1, 10LL * 365 * 86400, &n, err)) == 0)
            o->job_dir_keep_s = (int)n;
        return rc;
    }
    if (!strcmp(flag, "--cpus")) {
        if ((rc = cli_parse_range(flag, v, 1, 1 << 20, &n, err)) == 0)
            o->cpus = (int)n;
        return rc;
    }
    /* --memory-mib */
    if ((rc = cli_parse_range(flag, v, 1, 1LL << 40, &n, err)) == 0)
        o->memory_mib = n;
    return rc;
}

static int fill_defaults(struct agent_opts *o, struct tide_err *err)
{
    const char *env;
    if (!o->server_url && (env = getenv("TIDE_SERVER")) && *env &&
        set_str(&o->server_url, env, err))
        return TIDE_ENOMEM;
    if (!o->server_url || !*o->server_url)
        return tide_err_set(err, TIDE_EINVAL, "--server",
                            "--server URL (or TIDE_SERVER) is required");
    size_t n = strlen(o->server_url);
    while (n > 1 && o->server_url[n - 1] == '/')
        o->server_url[--n] = '\0';
    int rc = split_servers(o, err);
    if (rc != 0)
        return rc;
    if (!o->ca && (env = getenv("TIDE_CA")) && *env && set_str(&o->ca, env, err))
        return TIDE_ENOMEM;
    if (!o->tls_cert && (env = getenv("TIDE_TLS_CERT")) && *env && set_str(&o->tls_cert, env, err))
        return TIDE_ENOMEM;
    if (!o->tls_key && (env = getenv("TIDE_TLS_KEY")) && *env && set_str(&o->tls_key, env, err))
        return TIDE_ENOMEM;
    if (!o->join_token && (env = getenv("TIDE_JOIN_TOKEN")) && *env &&
        set_str(&o->join_token, env, err))
        return TIDE_ENOMEM;
    if (!o->name) {
        char host[256];
        if (gethostname(host, sizeof host) != 0)
            return tide_err_set(err, TIDE_EINVAL, "--name", "no --name and no host name: %s",
                                strerror(errno));
        host[sizeof host - 1] = '\0';
        /* a host name may be longer or fancier than a node name may be */
        char *dot = strchr(host, '.');
        if (dot && dot != host)
            *dot = '\0';
        if (set_str(&o->name, host, err))
            return TIDE_ENOMEM;
    }
    rc = check_name(o->name, err);
    if (rc != 0)
        return rc;
    if (!o->work_dir && set_str(&o->work_dir, "./tide-agent", err))
        return TIDE_ENOMEM;
    if (!*o->work_dir)
        return tide_err_set(err, TIDE_EINVAL, "--work", "--work must not be empty");
    if (o->kill_grace_s < 0)
        o->kill_grace_s = 10;
    if (o->health_interval_s == 0)
        o->health_interval_s = 60;
    if (o->health_timeout_s == 0)
        o->health_timeout_s = 30;
    if (o->fake_fault_file && !o->fake_gpus)
        return tide_err_set(err, TIDE_EINVAL, "--fake-fault-file",
                            "--fake-fault-file needs --fake-gpus (NVML reports real faults)");
    if (o->cpus == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        o->cpus = c > 0 ? (int)c : 1;
    }
    if (o->memory_mib == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        o->memory_mib = pages > 0 && page > 0 ? (int64_t)pages * page / (1024 * 1024) : 0;
    }
    return 0;
}

int agent_opts_parse(int argc, char **argv, struct agent_opts *o, struct tide_err *err)
{
    memset(o, 0, sizeof *o);
    o->kill_grace_s = -1;
    o->job_dir_keep_s = JOB_DIR_KEEP_S_DEFAULT;
    o->max_log_mib = MAX_LOG_MIB_DEFAULT;
    struct cli_args a;
    const char *v;
    int id, r, rc = 0;
    cli_args_init(&a, argc, argv);
    while (rc == 0 && (r = cli_args_next(&a, agent_flags, &id, &v, err)) != CLI_ARGS_END) {
        if (r < 0)
            rc = r;
        else if (r == CLI_ARGS_POSITIONAL)
            rc = tide_err_set(err, TIDE_EINVAL, NULL, "unexpected argument '%s'", v);
        else if (id == CLI_ID_HELP)
            o->help = true;
        else if (!strcmp(agent_flags[id - 1].name, "--allow-root-jobs"))
            o->allow_root_jobs = true; /* the one flag that takes no value */
        else
            rc = apply_flag(o, agent_flags[id - 1].name, v, err);
    }
    if (rc == 0 && a.next < argc)
        rc = tide_err_set(err, TIDE_EINVAL, NULL, "unexpected argument '%s'", argv[a.next]);
    if (rc == 0 && o->help) {
        agent_opts_release(o);
        o->help = true;
        return 0;
    }
    if (rc == 0)
        rc = fill_defaults(o, err);
    if (rc != 0)
        agent_opts_release(o);
    return rc;
}

void agent_opts_release(struct agent_opts *o)
{
    if (!o)
        return;
    free(o->server_url);
    for (size_t i = 0; i < o->nservers; i++)
        free(o->server_urls[i]);
    free(o->server_urls);
    free(o->join_token);
    free(o->name);
    free(o->work_dir);
    free(o->fake_gpus);
    free(o->pool);
    free(o->ca);
    free(o->tls_cert);
    free(o->tls_key);
    free(o->fake_fault_file);
    free(o->health_command);
    free(o->job_user);
    free(o->allow_users);
    free(o->container_runtime);
    for (size_t i = 0; i < o->nprewarm; i++)
        free(o->prewarm_images[i]);
    free(o->prewarm_images);
    memset(o, 0, sizeof *o);
}
