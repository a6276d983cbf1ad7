/*
 * The environment a task starts with: the agent's own, minus its secrets,
 * then the job spec's env, then the variables tide sets, where a later layer
 * replaces an earlier one's value for the same name.
 */
#ifndef TIDE_AGENT_TASK_ENV_H
#define TIDE_AGENT_TASK_ENV_H

#include <stddef.h>

/* Builds a new NULL-terminated "NAME=VALUE" array (free it with
 * agent_task_env_free) from base (the agent's environ), spec (the job's
 * "NAME=VALUE" entries) and tide (the variables tide sets). Entries of base
 * named TIDE_JOIN_TOKEN or TIDE_TOKEN are left out so that jobs cannot read
 * the agent's credentials. Returns 0 or TIDE_ENOMEM. */
int agent_task_env_build(char *const *base, char *const *spec, size_t nspec, char *const *tide,
                         size_t ntide, char ***out);

/* Frees an array from agent_task_env_build; accepts NULL. */
void agent_task_env_free(char **env);

#endif
