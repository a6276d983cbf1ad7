/*
 * What the vfork child of a task (task.c) is handed ready-made by the agent,
 * so that it makes as few system calls as it can between vfork and exec:
 * the signals the agent catches (only those go back to their default in the
 * child, not all 64 asked one by one), and where on PATH a program is (one
 * execve instead of one per PATH entry before it). Both are hints the child
 * can check: a cached path that no longer execs falls back to execvpe, which
 * then searches and fails exactly as it always did.
 */
#ifndef TIDE_AGENT_TASK_EXEC_H
#define TIDE_AGENT_TASK_EXEC_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* The signals with a handler of the process's, plus SIGPIPE (which the
 * agent ignores and the task must see at its default). */
struct agent_task_signals {
    int sigs[NSIG];
    size_t n;
};

/* Reads the process's handlers now into *s (NSIG sigaction calls). */
void agent_task_signals_scan(struct agent_task_signals *s);

/* The agent's set, scanned at the first call and kept. The agent installs
 * all its handlers (agent_main.c, agent_wake.c) before its first start, so
 * only tests, which install more later, call agent_task_signals_refresh. */
const struct agent_task_signals *agent_task_signals_caught(void);
void agent_task_signals_refresh(void);

/* How long a resolved path is trusted before PATH is searched again. */
#define AGENT_EXEC_CACHE_TTL_MS 10000
#define AGENT_EXEC_CACHE_SLOTS 16

struct agent_exec_cache_entry {
    char *name; /* the command's argv[0]; NULL: a free slot */
    char *path; /* where PATH led, absolute */
    int64_t resolved_ms;
};

/* Programs resolved on PATH, per name. Zero-initialised is empty. */
struct agent_exec_cache {
    struct agent_exec_cache_entry slots[AGENT_EXEC_CACHE_SLOTS];
    size_t next; /* the slot the next new name replaces, round robin */
    char uncached[PATH_MAX]; /* the last name found on a job's own PATH */
};

/* Where execvpe would find name, searching path (a PATH value, the job's
 * own, looked up afresh and not cached; NULL: the process's PATH, as the
 * cache knows it or finds it now): the first regular file with an
 * execute bit, its path owned by the cache (valid until the next call).
 * Where this says NULL the child's execvpe searches the agent's PATH (it
 * reads the caller's, not envp), so a program not on a job's own PATH is
 * still found on the agent's.
 * NULL where the child should search itself: a name with a '/', a PATH with
 * a relative entry (the child resolves it in its own cwd), nothing found,
 * or no memory. */
const char *agent_exec_cache_find(struct agent_exec_cache *c, const char *name,
                                  const char *path, int64_t now_ms);

/* Frees what the cache holds; it is empty after. */
void agent_exec_cache_release(struct agent_exec_cache *c);

#endif
