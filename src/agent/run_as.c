/* Choosing and becoming a job's user (run_as.h). */
#include "agent/run_as.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The dedicated user docs/agent.md tells operators to create. */
#define RUN_AS_DEDICATED "tide-job"
#define RUN_AS_FALLBACK "nobody"

static bool user_exists(const char *name)
{
    char buf[4096];
    struct passwd pw, *res = NULL;
    return getpwnam_r(name, &pw, buf, sizeof buf, &res) == 0 && res;
}

bool agent_run_as_default(const struct agent_opts *o, char *out, size_t n)
{
    if (geteuid() != 0) {
        snprintf(out, n, "the agent's own user (not root: no switch)");
        return false;
    }
    const char *name = o->job_user                     ? o->job_user
                       : user_exists(RUN_AS_DEDICATED) ? RUN_AS_DEDICATED
                                                       : RUN_AS_FALLBACK;
    snprintf(out, n, "%s", name);
    return true;
}

/* Whether name is one of the comma-separated names in list. */
static bool list_has(const char *list, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == nl && !memcmp(p, name, nl))
            return true;
        p = c ? c + 1 : p + len;
    }
    return false;
}

int agent_run_as_resolve(const struct agent_opts *o, const char *requested, struct agent_run_as *r,
                         char *why, size_t why_n)
{
    memset(r, 0, sizeof *r);
    char dflt[64];
    bool can_switch = agent_run_as_default(o, dflt, sizeof dflt);
    const char *name = requested ? requested : dflt;
    if (!can_switch) {
        if (requested) {
            char buf[4096];
            struct passwd pw, *res = NULL;
            if (getpwnam_r(requested, &pw, buf, sizeof buf, &res) != 0 || !res ||
                res->pw_uid != geteuid()) {
                snprintf(why, why_n,
                         "user %.64s: this agent does not run as root and cannot run jobs as "
                         "another user",
                         requested);
                return -1;
            }
        }
        return 0; /* r->change false: the agent's user */
    }
    if (requested && strcmp(requested, dflt) != 0 && !list_has(o->allow_users, requested)) {
        snprintf(why, why_n, "user %.64s is not allowed on this node (agent --allow-users)",
                 requested);
        return -1;
    }
    char buf[16384];
    struct passwd pw, *res = NULL;
    int e = getpwnam_r(name, &pw, buf, sizeof buf, &res);
    if (e != 0 || !res) {
        snprintf(why, why_n, "user %.64s: %s on this node", name, e ? strerror(e) : "no such user");
        return -1;
    }
    if (res->pw_uid == 0 && !o->allow_root_jobs) {
        snprintf(why, why_n,
                 "user %.64s: jobs do not run as root unless the agent has --allow-root-jobs",
                 name);
        return -1;
    }
    r->change = true;
    r->uid = res->pw_uid;
    r->gid = res->pw_gid;
    snprintf(r->name, sizeof r->name, "%s", res->pw_name);
    snprintf(r->home, sizeof r->home, "%s", res->pw_dir ? res->pw_dir : "/");
    int ng = RUN_AS_MAX_GROUPS;
    if (getgrouplist(res->pw_name, res->pw_gid, r->groups, &ng) < 0) {
        /* more groups than we carry: the primary one is enough to run */
        r->groups[0] = res->pw_gid;
        ng = 1;
    }
    r->ngroups = ng;
    return 0;
}

/* A resolved user (the job's `user`, or the default for none), kept for
 * RUN_AS_CACHE_TTL_MS: the password and group files were read per start. */
struct run_as_cached {
    bool used;
    bool requested; /* false: the default user */
    char name[64];  /* the job's `user` */
    const struct agent_opts *opts;
    int64_t at_ms;
    struct agent_run_as r;
};
#define RUN_AS_CACHE_SLOTS 8
static struct run_as_cached run_as_cache[RUN_AS_CACHE_SLOTS];
static size_t run_as_cache_next;

int agent_run_as_resolve_cached(const struct agent_opts *o, const char *requested,
                                struct agent_run_as *r, char *why, size_t why_n, int64_t now_ms)
{
    if (requested && strlen(requested) >= sizeof run_as_cache[0].name)
        return agent_run_as_resolve(o, requested, r, why, why_n);
    for (size_t i = 0; i < RUN_AS_CACHE_SLOTS; i++) {
        const struct run_as_cached *c = &run_as_cache[i];
        if (c->used && c->opts == o && c->requested == (requested != NULL) &&
            (!requested || !strcmp(c->name, requested)) && now_ms - c->at_ms >= 0 &&
            now_ms - c->at_ms < RUN_AS_CACHE_TTL_MS) {
            *r = c->r;
            return 0;
        }
    }
    int rc = agent_run_as_resolve(o, requested, r, why, why_n);
    if (rc != 0)
        return rc; /* a refusal is asked again each time */
    struct run_as_cached *c = &run_as_cache[run_as_cache_next];
    run_as_cache_next = (run_as_cache_next + 1) % RUN_AS_CACHE_SLOTS;
    c->used = true;
    c->requested = requested != NULL;
    snprintf(c->name, sizeof c->name, "%s", requested ? requested : "");
    c->opts = o;
    c->at_ms = now_ms;
    c->r = *r;
    return 0;
}

/* The kernel's calls for 32-bit ids (the plain ones on 64-bit machines). */
#ifdef SYS_setresuid32
#define RUN_AS_SYS_SETGROUPS SYS_setgroups32
#define RUN_AS_SYS_SETRESGID SYS_setresgid32
#define RUN_AS_SYS_SETRESUID SYS_setresuid32
#else
#define RUN_AS_SYS_SETGROUPS SYS_setgroups
#define RUN_AS_SYS_SETRESGID SYS_setresgid
#define RUN_AS_SYS_SETRESUID SYS_setresuid
#endif

int agent_run_as_enter(const struct agent_run_as *r)
{
    if (!r || !r->change)
        return 0;
    /* System calls, not libc's setgroups/setgid/setuid: in a process with
     * threads those switch every thread, taking a lock of libc's and
     * marking each thread's descriptor first, and the child of a vfork
     * shares the agent's memory, so it would take the agent's lock and
     * write on its threads. The kernel's calls change the calling process
     * (the child) and touch nothing else. */
    if (syscall(RUN_AS_SYS_SETGROUPS, (size_t)r->ngroups, r->groups) != 0)
        return errno;
    if (syscall(RUN_AS_SYS_SETRESGID, r->gid, r->gid, r->gid) != 0)
        return errno;
    if (syscall(RUN_AS_SYS_SETRESUID, r->uid, r->uid, r->uid) != 0)
        return errno;
    /* a switch that left a way back to root is no switch */
    if (r->uid != 0 && (syscall(RUN_AS_SYS_SETRESUID, 0, 0, 0) == 0 || geteuid() == 0))
        return EPERM;
    return 0;
}
