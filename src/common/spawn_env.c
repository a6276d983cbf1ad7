/* Building a child's environment before fork (spawn_env.h). */
#include "common/spawn_env.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static size_t name_len(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

char **spawn_env_build(char *const extra[])
{
    size_t nenv = 0, nextra = 0;
    while (environ && environ[nenv])
        nenv++;
    while (extra && extra[nextra])
        nextra++;
    char **env = malloc((nenv + nextra + 1) * sizeof *env);
    if (!env)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < nenv; i++) {
        bool replaced = false;
        size_t len = name_len(environ[i]);
        for (size_t k = 0; k < nextra && !replaced; k++)
            replaced = name_len(extra[k]) == len && !strncmp(extra[k], environ[i], len);
        if (!replaced)
            env[n++] = environ[i];
    }
    for (size_t k = 0; k < nextra; k++)
        env[n++] = extra[k];
    env[n] = NULL;
    return env;
}
