/* What a task's child gets ready-made: the caught signals and program paths
 * (task_exec.h). */
#include "agent/task_exec.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* glibc's execvpe searches this when PATH is unset (confstr _CS_PATH) */
#define DEFAULT_SEARCH_PATH "/bin:/usr/bin"

void agent_task_signals_scan(struct agent_task_signals *s)
{
    s->n = 0;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction cur;
        /* libc's own signals answer EINVAL and are left alone */
        if (sig != SIGPIPE && sigaction(sig, NULL, &cur) == 0 && cur.sa_handler != SIG_DFL &&
            cur.sa_handler != SIG_IGN)
            s->sigs[s->n++] = sig;
    }
    s->sigs[s->n++] = SIGPIPE;
}

static struct agent_task_signals caught;
static pthread_once_t caught_once = PTHREAD_ONCE_INIT;

static void scan_caught(void)
{
    agent_task_signals_scan(&caught);
}

const struct agent_task_signals *agent_task_signals_caught(void)
{
    pthread_once(&caught_once, scan_caught);
    return &caught;
}

void agent_task_signals_refresh(void)
{
    pthread_once(&caught_once, scan_caught);
    agent_task_signals_scan(&caught);
}

/* The first dir/name of search that is a regular file with an execute bit,
 * into out; false when none is, or search has a relative entry. */
static bool search_path(const char *search, const char *name, char *out, size_t n)
{
    const char *p = search;
    bool found = false;
    for (;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* "" or "dir": execvpe would look in the child's cwd */
        if (len == 0 || p[0] != '/')
            return false;
        struct stat st;
        if (!found && (size_t)snprintf(out, n, "%.*s/%s", (int)len, p, name) < n &&
            stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
            found = true; /* the rest is still checked for relative entries */
        if (!end)
            return found;
        p = end + 1;
    }
}

const char *agent_exec_cache_find(struct agent_exec_cache *c, const char *name,
                                  const char *path, int64_t now_ms)
{
    if (!name[0] || strchr(name, '/'))
        return NULL;
    if (path) /* a job's own PATH: looked up each time, never cached for others */
        return search_path(path, name, c->uncached, sizeof c->uncached) ? c->uncached : NULL;
    for (size_t i = 0; i < AGENT_EXEC_CACHE_SLOTS; i++) {
        struct agent_exec_cache_entry *e = &c->slots[i];
        if (e->name && !strcmp(e->name, name) && now_ms - e->resolved_ms >= 0 &&
            now_ms - e->resolved_ms < AGENT_EXEC_CACHE_TTL_MS)
            return e->path;
    }
    path = getenv("PATH");
    if (!path)
        path = DEFAULT_SEARCH_PATH;
    char found[PATH_MAX];
    if (!search_path(path, name, found, sizeof found))
        return NULL;
    /* the name's old slot if it has one (expired), else the next in turn */
    struct agent_exec_cache_entry *e = NULL;
    for (size_t i = 0; i < AGENT_EXEC_CACHE_SLOTS && !e; i++)
        if (c->slots[i].name && !strcmp(c->slots[i].name, name))
            e = &c->slots[i];
    if (!e) {
        e = &c->slots[c->next];
        c->next = (c->next + 1) % AGENT_EXEC_CACHE_SLOTS;
    }
    char *n = strdup(name), *p = strdup(found);
    free(e->name);
    free(e->path);
    e->name = n && p ? n : NULL;
    e->path = n && p ? p : NULL;
    if (!e->name) {
        free(n);
        free(p);
        return NULL;
    }
    e->resolved_ms = now_ms;
    return e->path;
}

void agent_exec_cache_release(struct agent_exec_cache *c)
{
    for (size_t i = 0; i < AGENT_EXEC_CACHE_SLOTS; i++) {
        free(c->slots[i].name);
        free(c->slots[i].path);
    }
    memset(c, 0, sizeof *c);
}
