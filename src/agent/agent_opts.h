/*
 * The command line of `tide agent`: flags, their environment fallbacks and
 * defaults, checked once so the rest of the agent can trust them.
 */
#ifndef TIDE_AGENT_OPTS_H
#define TIDE_AGENT_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/tide_err.h"

/* Node names end up in URLs, UUIDs and file names, so they are kept short
 * and plain. */
#define AGENT_NAME_MAX 63

/* A task's log past this many MiB ends it (--max-log-mib): a job that
 * prints without end would fill the node's disk, then the server's. */
#define MAX_LOG_MIB_DEFAULT 10240

struct agent_opts {
    char *server_url; /* as given: one URL or several, comma-separated */
    char **server_urls; /* server_url split, each without a trailing '/' */
    size_t nservers;    /* 1..AGENT_SERVERS_MAX (agent_servers.h) */
    char *join_token; /* NULL when none was given (a saved node.json may do) */
    char *name;
    char *work_dir;   /* as given; the agent makes it absolute */
    char *fake_gpus;  /* NULL: use NVML */
    char *pool;       /* elastic pool this node belongs to; NULL: none */
    char *ca;         /* PEM CA to verify an https server with; NULL: system CAs */
    char *tls_cert;   /* client certificate and key for servers that ask; NULL: none */
    char *tls_key;
    char *job_user;    /* --job-user: jobs' default user; NULL: tide-job, else nobody */
    char *allow_users; /* --allow-users: comma-separated users a job may ask for */
    bool allow_root_jobs; /* --allow-root-jobs: a job may run as root */
    int heartbeat_ms; /* 0: what the server says, else 1000 */
    int kill_grace_s;
    int job_dir_keep_s; /* WORK/jobs/ID kept this long once done; -1: for good */
    int64_t max_log_mib; /* a task whose log grows past this is killed; 0: no cap */
    int cpus;
    int64_t memory_mib;
    char *fake_fault_file;  /* faults injected into fake GPUs; NULL: none */
    char *health_command;   /* run by sh at start and every health_interval_s; NULL: none */
    int health_interval_s;
    int health_timeout_s;
    char *container_runtime; /* podman, docker or a path; NULL: podman, else docker */
    char **prewarm_images;   /* pulled at start unless held (--prewarm-image, repeatable) */
    size_t nprewarm;
    bool help; /* --help was asked for; nothing else is filled */
};

/* Parses argv (argv[0] is "agent") with TIDE_SERVER, TIDE_JOIN_TOKEN,
 * TIDE_CA, TIDE_TLS_CERT and TIDE_TLS_KEY as fallbacks. Returns 0 (release o with agent_opts_release) or TIDE_EINVAL
 * with err naming the flag and what is wrong; o is then already released. */
int agent_opts_parse(int argc, char **argv, struct agent_opts *o, struct tide_err *err);

/* Frees the strings of o; safe on a zeroed or released struct. */
void agent_opts_release(struct agent_opts *o);

/* Prints the flags. */
void agent_opts_usage(FILE *out);

#endif
