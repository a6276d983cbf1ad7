/* Quotas, borrowing and decayed use per project (see fairshare.h). */
#include "core/fairshare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"

#include "core/core_banned.h"

void fairshare_init(struct fairshare *fs, int64_t half_life_s)
{
    memset(fs, 0, sizeof *fs);
    fs->half_life_s = half_life_s > 0 ? half_life_s : 3600;
}

struct project_share *fairshare_find(struct fairshare *fs, const char *name)
{
    for (int i = 0; i < fs->count; i++)
        if (!strcmp(fs->projects[i].cfg.name, name))
            return &fs->projects[i];
    return NULL;
}

struct project_share *fairshare_add(struct fairshare *fs, const struct project_config *cfg)
{
    if (fs->count >= TIDE_MAX_PROJECTS || fairshare_find(fs, cfg->name))
        return NULL;
    struct project_share *p = &fs->projects[fs->count++];
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    if (p->cfg.weight < 1)
        p->cfg.weight = 1;
    return p;
}

void fairshare_update(struct fairshare *fs, struct cluster *c, int64_t now_ms)
{
    if (fs->count == 0)
        return;
    double dt_s = fs->updated_ms && now_ms > fs->updated_ms ? (double)(now_ms - fs->updated_ms) / 1000.0 : 0;
    double decay = pow(0.5, dt_s / (double)fs->half_life_s);
    for (int i = 0; i < fs->count; i++) {
        struct project_share *p = &fs->projects[i];
        /* GPUs held through the interval count at the rate held at its end:
         * exact for steady work, and passes come every second or so. */
        p->usage_gpu_s = p->usage_gpu_s * decay;
        p->running_gpus = 0;
        p->borrowed_gpus = 0;
    }
    for (size_t j = 0; j < c->njobs; j++) {
        const struct job *job = &c->jobs[j];
        if (!job_state_is_on_node(job->state))
            continue;
        struct project_share *p = fairshare_find(fs, job->project);
        if (!p)
            continue;
        p->running_gpus += job->gpus;
        if (job->borrowed)
            p->borrowed_gpus += job->gpus;
        p->usage_gpu_s += (double)job->gpus * dt_s;
    }
    fs->updated_ms = now_ms;
    /* A project back within its quota borrows nothing now: what its jobs
     * borrowed when they started is no longer reclaimable by others. */
    bool back = false;
    for (int i = 0; i < fs->count; i++)
        back |= fs->projects[i].borrowed_gpus > 0 &&
                fs->projects[i].running_gpus <= fs->projects[i].cfg.quota_gpus;
    for (size_t j = 0; back && j < c->njobs; j++) {
        struct job *job = &c->jobs[j];
        if (!job->borrowed || !job_state_is_on_node(job->state))
            continue;
        struct project_share *p = fairshare_find(fs, job->project);
        if (p && p->running_gpus <= p->cfg.quota_gpus) {
            job->borrowed = false;
            p->borrowed_gpus -= job->gpus;
        }
    }
}

void fairshare_classify(const struct fairshare *fs, struct job *job)
{
    if (fs->count == 0) {
        job->in_quota = true;
        job->share_key = 0;
        return;
    }
    const struct project_share *p = NULL;
    for (int i = 0; i < fs->count && !p; i++)
        if (!strcmp(fs->projects[i].cfg.name, job->project))
            p = &fs->projects[i];
    /* Projects without a configured quota may only borrow. */
    int quota = p ? p->cfg.quota_gpus : 0;
    int running = p ? p->running_gpus : 0;
    job->in_quota = running + job->gpus <= quota;
    double per_weight = p ? p->usage_gpu_s / p->cfg.weight : 0;
    job->share_key = job->in_quota ? 0 : 1 + (int64_t)per_weight;
}

bool fairshare_claim_in_order(const struct fairshare *fs, struct job **order, size_t n)
{
    int claimed[TIDE_MAX_PROJECTS] = {0};
    bool changed = false;
    for (size_t i = 0; i < n; i++) {
        struct job *job = order[i];
        if (!job->in_quota)
            continue;
        int k = 0;
        while (k < fs->count && strcmp(fs->projects[k].cfg.name, job->project))
            k++;
        if (k == fs->count)
            continue;
        const struct project_share *p = &fs->projects[k];
        if (p->running_gpus + claimed[k] + job->gpus <= p->cfg.quota_gpus) {
            claimed[k] += job->gpus;
            continue;
        }
        job->in_quota = false;
        job->share_key = 1 + (int64_t)(p->usage_gpu_s / p->cfg.weight);
        changed = true;
    }
    return changed;
}

void fairshare_note_start(struct fairshare *fs, struct job *job)
{
    struct project_share *p = fairshare_find(fs, job->project);
    if (fs->count == 0) {
        job->borrowed = false;
        return;
    }
    int quota = p ? p->cfg.quota_gpus : 0;
    int running = p ? p->running_gpus : 0;
    job->borrowed = running + job->gpus > quota;
    if (p) {
        p->running_gpus += job->gpus;
        if (job->borrowed)
            p->borrowed_gpus += job->gpus;
    }
}

static int by_project_then_start(const void *a, const void *b)
{
    const struct job *x = *(const struct job *const *)a, *y = *(const struct job *const *)b;
    int p = strcmp(x->project, y->project);
    if (p)
        return p;
    if (x->start_ms != y->start_ms)
        return x->start_ms < y->start_ms ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int fairshare_mark_borrowed(struct fairshare *fs, struct cluster *c)
{
    if (fs->count == 0)
        return 0;
    size_t n = 0;
    for (size_t j = 0; j < c->njobs; j++)
        n += job_state_is_on_node(c->jobs[j].state);
    struct job **running = malloc((n ? n : 1) * sizeof *running);
    if (!running)
        return TIDE_ENOMEM;
    n = 0;
    for (size_t j = 0; j < c->njobs; j++)
        if (job_state_is_on_node(c->jobs[j].state))
            running[n++] = &c->jobs[j];
    qsort(running, n, sizeof *running, by_project_then_start);
    /* Oldest first within each project: whatever goes beyond the quota borrows. */
    const struct project_share *p = NULL;
    int used = 0;
    for (size_t k = 0; k < n; k++) {
        struct job *job = running[k];
        if (k == 0 || strcmp(job->project, running[k - 1]->project)) {
            p = fairshare_find(fs, job->project);
            used = 0;
        }
        used += job->gpus;
        job->borrowed = !p || used > p->cfg.quota_gpus;
    }
    free(running);
    return 0;
}
