/*
 * A containerised task's variables (the job's env and tide's TIDE_*), as
 * the env file its runtime reads (--env-file=/dev/fd/N). The runtime runs
 * as the agent (root, usually): given the job's variables in its own
 * environment, a job's LD_PRELOAD or CONTAINERS_CONF would run code in it
 * or pick its OCI runtime. So the runtime gets the agent's environment
 * only, and the variables reach the container through an anonymous file
 * in memory (memfd): on no disk, and not on the command line (ps).
 */
#ifndef TIDE_AGENT_TASK_ENV_FILE_H
#define TIDE_AGENT_TASK_ENV_FILE_H

#include <stddef.h>

/* A memfd (close-on-exec) holding "NAME=VALUE\n" for each of env then
 * vars; its descriptor, or -1 with why filled (a value with a newline,
 * which no env file can carry) or -2 (errno: the system's refusal). */
int agent_task_env_file(char *const *env, size_t nenv, char *const *vars, size_t nvars, char *why,
                        size_t why_size);

#endif
