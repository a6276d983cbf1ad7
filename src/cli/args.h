/*
 * The command-line option reader of every `tide` role (server, agent, up,
 * sim and the client subcommands), so errors and --help read alike: long
 * options as `--name VALUE` or `--name=VALUE`, boolean flags, positional
 * arguments and `--`, which ends the options (`tide submit -- CMD ARGS`).
 * Each command lists its options in a table; the common client options
 * (--server, --token, --ca, --json, --help) come from CLI_COMMON_OPTS.
 */
#ifndef TIDE_CLI_ARGS_H
#define TIDE_CLI_ARGS_H

#include "common/tide_err.h"

enum cli_opt_kind {
    CLI_OPT_FLAG,     /* --wait; --wait=VALUE is an error */
    CLI_OPT_VALUE,    /* --name VALUE or --name=VALUE */
    CLI_OPT_OPTIONAL, /* --preemptible, or --preemptible=false (value only after '=') */
};

struct cli_opt {
    const char *name; /* "--gpus" or "-f" */
    enum cli_opt_kind kind;
    int id; /* returned to the caller; negative ids are the common options */
};

enum {
    CLI_ID_HELP = -1,
    CLI_ID_SERVER = -2,
    CLI_ID_TOKEN = -3,
    CLI_ID_JSON = -4,
    CLI_ID_CA = -5,
};

#define CLI_COMMON_OPTS                                                                            \
    {"--server", CLI_OPT_VALUE, CLI_ID_SERVER}, {"--token", CLI_OPT_VALUE, CLI_ID_TOKEN},          \
        {"--json", CLI_OPT_FLAG, CLI_ID_JSON}, {"--help", CLI_OPT_FLAG, CLI_ID_HELP},              \
        {"-h", CLI_OPT_FLAG, CLI_ID_HELP}, {"--ca", CLI_OPT_VALUE, CLI_ID_CA}

struct cli_args {
    int argc;
    char **argv;
    int next;     /* index of the next argument to read */
    int dashdash; /* set once "--" was read; argv[next..] is what followed it */
};

enum cli_args_result {
    CLI_ARGS_END = 0,        /* no more options: end of argv or "--" */
    CLI_ARGS_OPTION = 1,     /* *id and *value (NULL for flags without one) */
    CLI_ARGS_POSITIONAL = 2, /* *value is the argument */
};

/* Starts reading argv after argv[0] (the subcommand's name). opts ends with
 * an entry whose name is NULL. */
void cli_args_init(struct cli_args *a, int argc, char **argv);

/* Reads the next argument. Returns a cli_args_result, or TIDE_EINVAL with err
 * set for an unknown option, a missing value or a value given to a flag. */
int cli_args_next(struct cli_args *a, const struct cli_opt *opts, int *id, const char **value,
                  struct tide_err *err);

/* Parses a whole decimal integer (optional sign) for the option named flag.
 * Returns 0, or TIDE_EINVAL naming the flag when s is not one or overflows. */
int cli_parse_ll(const char *flag, const char *s, long long *out, struct tide_err *err);

/* cli_parse_ll within [lo, hi]; the error names flag and the range. */
int cli_parse_range(const char *flag, const char *s, long long lo, long long hi, long long *out,
                    struct tide_err *err);

/* Parses a job id (a positive integer) given as argument what. */
int cli_parse_id(const char *what, const char *s, long long *out, struct tide_err *err);

/* Parses true/false/yes/no/1/0 for flag; NULL (flag given bare) is true. */
int cli_parse_bool(const char *flag, const char *s, int *out, struct tide_err *err);

#endif
