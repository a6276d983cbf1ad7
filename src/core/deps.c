/* Releasing and failing jobs that wait on others (see deps.h). */
#include "core/deps.h"

#include <stdio.h>

#include "core/core_banned.h"

int deps_resolve(struct cluster *c, deps_final_state_fn final_state_of, void *ctx,
                 struct action_list *out)
{
    int released = 0;
    for (size_t i = 0; i < c->njobs;) {
        struct job *job = &c->jobs[i];
        if (!job->held) {
            i++;
            continue;
        }
        bool waiting = false;
        int64_t broken = 0;
        int broken_state = -1;
        for (int d = 0; d < job->ndeps && !broken; d++) {
            if (cluster_find_job(c, job->depends_on[d])) {
                waiting = true;
                continue;
            }
            int st = final_state_of(job->depends_on[d], ctx);
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
            action_list_push(out, &a);
            cluster_remove_job(c, job->id); /* index i now holds the next job */
            continue;
        }
        if (!waiting) {
            job->held = false;
            released++;
        } else {
            snprintf(job->wait_reason, sizeof job->wait_reason, "waiting for its dependencies");
        }
        i++;
    }
    return released;
}
