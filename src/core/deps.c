/* Releasing and failing jobs that wait on others (see deps.h). */
#include "core/deps.h"

#include <stdio.h>

#include "core/core_banned.h"

struct resolve {
    struct cluster *c;
    deps_final_state_fn final_state_of;
    void *ctx;
    struct action_list *out;
    int released;
    /* The last finished dependency looked up: the many dependents of one job
     * ask the shell (a database read) once. */
    int64_t known_id;
    int known_state;
};

static int final_state(struct resolve *r, int64_t id)
{
    if (id != r->known_id) {
        r->known_state = r->final_state_of(id, r->ctx);
        r->known_id = id;
    }
    return r->known_state;
}

/* Releases job when all it waits on succeeded; true when one of them ended
 * otherwise, so the job fails (its action pushed) and goes. */
static bool resolve_one(struct job *job, void *arg)
{
    struct resolve *r = arg;
    if (job->held && (job->state != JOB_PENDING || job->attempt > 0))
        job->held = false; /* it started once, its dependencies met: a reload reads
                            * them again, and those since purged must not fail it */
    if (!job->held)
        return false;
    bool waiting = false;
    int64_t broken = 0;
    int broken_state = -1;
    for (int d = 0; d < job->ndeps && !broken; d++) {
        if (cluster_find_job(r->c, job->depends_on[d])) {
            waiting = true;
            continue;
        }
        int st = final_state(r, job->depends_on[d]);
        if (st != JOB_SUCCEEDED) {
            broken = job->depends_on[d];
            broken_state = st;
        }
    }
    if (broken) {
        struct action a = {.type = ACTION_FINISH, .job_id = job->id, .attempt = job->attempt,
                           .state = JOB_FAILED, .exit_code = -1};
        snprintf(a.reason, sizeof a.reason, "dependency %lld %s", (long long)broken,
                 broken_state < 0 ? "does not exist" : job_state_name((enum job_state)broken_state));
        action_list_push(r->out, &a);
        return true;
    }
    if (!waiting) {
        job->held = false;
        r->released++;
    } else {
        snprintf(wait_reason_text(job), sizeof job->wait_reason, "waiting for its dependencies");
    }
    return false;
}

int deps_resolve(struct cluster *c, deps_final_state_fn final_state_of, void *ctx,
                 struct action_list *out)
{
    struct resolve r = {.c = c, .final_state_of = final_state_of, .ctx = ctx, .out = out};
    cluster_remove_jobs_if(c, resolve_one, &r);
    return r.released;
}
