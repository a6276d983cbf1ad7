/* Parsing `tide agent` flags (agent_opts.h). A small hand-rolled parser
 * rather than getopt_long, whose global state does not reset cleanly. */
#include "agent/agent_opts.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsutil.h"

#define TOKEN_FILE_MAX 4096

void agent_opts_usage(FILE *out)
{
    fprintf(out, "usage: tide agent --server URL (--token TOKEN | --token-file PATH) [options]\n"
                 "\n"
                 "  --server URL        tide server (or TIDE_SERVER)\n"
                 "  --token TOKEN       join token (or TIDE_JOIN_TOKEN); optional once the\n"
                 "                      node is registered (WORK/node.json)\n"
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
                 "  --cpus N            CPUs to report (default: online CPUs)\n"
                 "  --memory-mib N      memory to report (default: physical memory)\n"
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

static int parse_int(const char *flag, const char *v, long long min, long long max, long long *out,
                     struct tide_err *err)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < min || n > max)
        return tide_err_set(err, TIDE_EINVAL, flag, "%s: '%s' is not an integer in %lld..%lld",
                            flag, v, min, max);
    *out = n;
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

static bool known_flag(const char *flag)
{
    static const char *const flags[] = {
        "--server",    "--token",        "--token-file",   "--name", "--work",
        "--fake-gpus", "--heartbeat-ms", "--kill-grace-s", "--cpus", "--memory-mib", "--pool"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (!strcmp(flag, flags[i]))
            return true;
    return false;
}

/* One flag with its value v (NULL for flags without one). */
static int apply_flag(struct agent_opts *o, const char *flag, const char *v, struct tide_err *err)
{
    long long n;
    int rc;
    if (!strcmp(flag, "--server"))
        return set_str(&o->server_url, v, err);
    if (!strcmp(flag, "--token"))
        return set_str(&o->join_token, v, err);
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
    if (!strcmp(flag, "--heartbeat-ms")) {
        if ((rc = parse_int(flag, v, 10, 3600000, &n, err)) == 0)
            o->heartbeat_ms = (int)n;
        return rc;
    }
    if (!strcmp(flag, "--kill-grace-s")) {
        if ((rc = parse_int(flag, v, 0, 86400, &n, err)) == 0)
            o->kill_grace_s = (int)n;
        return rc;
    }
    if (!strcmp(flag, "--cpus")) {
        if ((rc = parse_int(flag, v, 1, 1 << 20, &n, err)) == 0)
            o->cpus = (int)n;
        return rc;
    }
    if (!strcmp(flag, "--memory-mib")) {
        if ((rc = parse_int(flag, v, 1, 1LL << 40, &n, err)) == 0)
            o->memory_mib = n;
        return rc;
    }
    return tide_err_set(err, TIDE_EINVAL, flag, "unknown flag '%s'", flag);
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
    int rc = check_name(o->name, err);
    if (rc != 0)
        return rc;
    if (!o->work_dir && set_str(&o->work_dir, "./tide-agent", err))
        return TIDE_ENOMEM;
    if (!*o->work_dir)
        return tide_err_set(err, TIDE_EINVAL, "--work", "--work must not be empty");
    if (o->kill_grace_s < 0)
        o->kill_grace_s = 10;
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
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            agent_opts_release(o);
            o->help = true;
            return 0;
        }
        if (strncmp(a, "--", 2) != 0) {
            rc = tide_err_set(err, TIDE_EINVAL, NULL, "unexpected argument '%s'", a);
            break;
        }
        char flag[64];
        const char *eq = strchr(a, '=');
        const char *v;
        size_t flen = eq ? (size_t)(eq - a) : strlen(a);
        if (flen >= sizeof flag) {
            rc = tide_err_set(err, TIDE_EINVAL, NULL, "unknown flag '%s'", a);
            break;
        }
        memcpy(flag, a, flen);
        flag[flen] = '\0';
        if (!known_flag(flag)) {
            rc = tide_err_set(err, TIDE_EINVAL, flag, "unknown flag '%s'", flag);
            break;
        }
        if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            rc = tide_err_set(err, TIDE_EINVAL, flag, "%s needs a value", flag);
            break;
        }
        rc = apply_flag(o, flag, v, err);
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
    free(o->join_token);
    free(o->name);
    free(o->work_dir);
    free(o->fake_gpus);
    free(o->pool);
    memset(o, 0, sizeof *o);
}
