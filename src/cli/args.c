/* Reading subcommand options from a table (see args.h). */
#include "cli/args.h"

#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void cli_args_init(struct cli_args *a, int argc, char **argv)
{
    a->argc = argc;
    a->argv = argv;
    a->next = 1;
    a->dashdash = 0;
}

static const struct cli_opt *find_opt(const struct cli_opt *opts, const char *arg, size_t len)
{
    for (; opts->name; opts++)
        if (strlen(opts->name) == len && !strncmp(opts->name, arg, len))
            return opts;
    return NULL;
}

int cli_args_next(struct cli_args *a, const struct cli_opt *opts, int *id, const char **value,
                  struct tide_err *err)
{
    *value = NULL;
    if (a->dashdash || a->next >= a->argc)
        return CLI_ARGS_END;
    const char *arg = a->argv[a->next++];
    if (!strcmp(arg, "--")) {
        a->dashdash = 1;
        return CLI_ARGS_END;
    }
    if (arg[0] != '-' || arg[1] == '\0') { /* "-" alone is a positional (stdin) */
        *value = arg;
        return CLI_ARGS_POSITIONAL;
    }
    const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
    size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    const struct cli_opt *o = find_opt(opts, arg, name_len);
    if (!o)
        return tide_err_set(err, TIDE_EINVAL, NULL, "unknown option '%.*s'", (int)name_len, arg);
    *id = o->id;
    switch (o->kind) {
    case CLI_OPT_FLAG:
        if (eq)
            return tide_err_set(err, TIDE_EINVAL, NULL, "%s takes no value", o->name);
        break;
    case CLI_OPT_OPTIONAL:
        if (eq)
            *value = eq + 1;
        break;
    case CLI_OPT_VALUE:
        if (eq) {
            *value = eq + 1;
        } else {
            if (a->next >= a->argc)
                return tide_err_set(err, TIDE_EINVAL, NULL, "%s needs a value", o->name);
            *value = a->argv[a->next++];
        }
        break;
    }
    return CLI_ARGS_OPTION;
}

int cli_parse_ll(const char *flag, const char *s, long long *out, struct tide_err *err)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || isspace((unsigned char)*s) || *end != '\0')
        return tide_err_set(err, TIDE_EINVAL, flag + strspn(flag, "-"),
                            "%s: '%s' is not a whole number", flag, s);
    if (errno == ERANGE)
        return tide_err_set(err, TIDE_EINVAL, flag + strspn(flag, "-"),
                            "%s: '%s' is too large", flag, s);
    *out = v;
    return 0;
}

int cli_parse_range(const char *flag, const char *s, long long lo, long long hi, long long *out,
                    struct tide_err *err)
{
    long long n = 0;
    if (cli_parse_ll(flag, s, &n, NULL) < 0 || n < lo || n > hi)
        return tide_err_set(err, TIDE_EINVAL, flag + strspn(flag, "-"),
                            "%s: '%s' is not a whole number from %lld to %lld", flag, s, lo, hi);
    *out = n;
    return 0;
}

int cli_parse_id(const char *what, const char *s, long long *out, struct tide_err *err)
{
    if (cli_parse_ll(what, s, out, NULL) < 0 || *out <= 0)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: '%s' is not a job id", what, s);
    return 0;
}

int cli_parse_bool(const char *flag, const char *s, int *out, struct tide_err *err)
{
    static const char *const yes[] = {"true", "yes", "1", "on", NULL};
    static const char *const no[] = {"false", "no", "0", "off", NULL};
    if (!s) {
        *out = 1;
        return 0;
    }
    for (int i = 0; yes[i]; i++)
        if (!strcasecmp(s, yes[i])) {
            *out = 1;
            return 0;
        }
    for (int i = 0; no[i]; i++)
        if (!strcasecmp(s, no[i])) {
            *out = 0;
            return 0;
        }
    return tide_err_set(err, TIDE_EINVAL, flag + strspn(flag, "-"),
                        "%s: '%s' is not true or false", flag, s);
}

void cli_scrub_secret(const char *prefix, const char *flag, const char *value)
{
    fprintf(stderr,
            "%s: warning: %s on the command line is visible to other users (ps); use %s-file "
            "or the environment instead\n",
            prefix, flag, flag);
    /* argv's strings are writable; this is where ps reads them from */
    char *s = (char *)value;
    memset(s, 'x', strlen(s));
}
