/*
 * Environments for programs started from a multithreaded process: between
 * fork and exec only async-signal-safe calls are allowed (another thread may
 * hold the allocator's lock), so the new environment is built before fork.
 */
#ifndef TIDE_SPAWN_ENV_H
#define TIDE_SPAWN_ENV_H

/* A new NULL-terminated array: this process's environment with each
 * "NAME=VALUE" of extra (NULL-terminated) replacing or adding its NAME. The
 * strings are shared, the array is the caller's to free(); NULL when out of
 * memory. */
char **spawn_env_build(char *const extra[]);

#endif
