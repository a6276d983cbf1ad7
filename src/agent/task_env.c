/* Layering the agent's, the job's and tide's variables into one envp. */
#include "agent/task_env.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"

static size_t name_len(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

static int has_name(char **env, size_t n, const char *entry)
{
    size_t len = name_len(entry);
    for (size_t i = 0; i < n; i++)
        if (name_len(env[i]) == len && !strncmp(env[i], entry, len))
            return 1;
    return 0;
}

static int is_secret(const char *entry)
{
    static const char *const secrets[] = {"TIDE_JOIN_TOKEN", "TIDE_TOKEN"};
    size_t len = name_len(entry);
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        if (strlen(secrets[i]) == len && !strncmp(entry, secrets[i], len))
            return 1;
    return 0;
}

int agent_task_env_build(char *const *base, char *const *spec, size_t nspec, char *const *tide,
                         size_t ntide, char ***out)
{
    size_t nbase = 0;
    while (base && base[nbase])
        nbase++;
    size_t cap = nbase + nspec + ntide + 1;
    char **env = calloc(cap, sizeof *env);
    if (!env)
        return TIDE_ENOMEM;
    size_t n = 0;
    /* the first layer added wins, so add them from the strongest down */
    char *const *layers[3] = {tide, spec, base};
    size_t counts[3] = {ntide, nspec, nbase};
    for (int l = 0; l < 3; l++) {
        for (size_t i = 0; i < counts[l]; i++) {
            const char *e = layers[l][i];
            if (!strchr(e, '=') || has_name(env, n, e) || (l == 2 && is_secret(e)))
                continue;
            env[n] = strdup(e);
            if (!env[n]) {
                agent_task_env_free(env);
                return TIDE_ENOMEM;
            }
            n++;
        }
    }
    *out = env;
    return 0;
}

void agent_task_env_free(char **env)
{
    if (!env)
        return;
    for (char **p = env; *p; p++)
        free(*p);
    free(env);
}
