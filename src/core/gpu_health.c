/* GPU faults and health probes applied to the cluster (gpu_health.h). */
#include "core/gpu_health.h"

#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

#include "core/core_banned.h"

static struct gpu *find_gpu(struct node *node, int index)
{
    for (int g = 0; g < node->ngpus; g++)
        if (node->gpus[g].index == index)
            return &node->gpus[g];
    return NULL;
}

/* Whether GPU entry index of node is the GPU gpu_index or a MIG instance
 * cut from it. */
static bool is_or_cut_from(struct node *node, int index, int gpu_index)
{
    const struct gpu *g = find_gpu(node, index);
    return index == gpu_index || (g && g->mig_profile[0] && g->mig_parent == gpu_index);
}

/* Whether job has a task on GPU index of node or on one of its MIG
 * instances (any GPU when index < 0). */
static bool job_uses_gpu(const struct job *job, struct node *node, int index)
{
    int here[TIDE_MAX_GPUS_PER_NODE];
    int n = job_gpus_on_node(job, node->id, here);
    if (index < 0)
        return job_on_node(job, node->id);
    for (int i = 0; i < n; i++)
        if (is_or_cut_from(node, here[i], index))
            return true;
    return false;
}

static int stop_jobs(struct cluster *c, struct node *node, int index, const char *why,
                     struct action_list *out)
{
    for (size_t j = 0; j < c->njobs; j++) {
        struct job *job = &c->jobs[j];
        if ((job->state != JOB_STARTING && job->state != JOB_RUNNING) || job->cancel_requested ||
            job->gang_failed || job->reclaim_requested || !job_uses_gpu(job, node, index))
            continue;
        struct action *a = action_push_preempt(out, job);
        if (!a)
            return TIDE_ENOMEM;
        snprintf(a->reason, sizeof a->reason, "%s", why);
    }
    return 0;
}

/* Whether node has a healthy GPU to give out: a whole GPU or a MIG
 * instance (a GPU in MIG mode is given out only through its instances). */
static bool has_healthy_gpu(const struct node *node)
{
    for (int g = 0; g < node->ngpus; g++)
        if (!node->gpus[g].mig_mode && !node->gpus[g].faulty)
            return true;
    return false;
}

void gpu_health_spread_to_instances(struct node *node)
{
    for (int g = 0; g < node->ngpus; g++) {
        struct gpu *inst = &node->gpus[g];
        const struct gpu *parent = inst->mig_profile[0] ? find_gpu(node, inst->mig_parent) : NULL;
        if (!parent || !parent->faulty || inst->faulty)
            continue;
        inst->faulty = true;
        snprintf(inst->fault, sizeof inst->fault, "GPU %d: %.38s", parent->index, parent->fault);
        utf8_trim_tail(inst->fault);
    }
}

static void drain(struct node *node, const char *reason)
{
    node->drained = true;
    node->probe_drained = false;
    snprintf(node->drain_reason, sizeof node->drain_reason, "%s", reason);
    if (node->state == NODE_READY)
        node->state = NODE_DRAINING;
}

int gpu_health_fault(struct cluster *c, struct node *node, int gpu_index, const char *fault,
                     bool node_wide, const struct gpu_health_config *cfg, int64_t now_ms,
                     struct action_list *out)
{
    struct gpu *gpu = find_gpu(node, gpu_index);
    if (!gpu)
        return TIDE_ENOENT;
    int bits = gpu->faulty ? 0 : GPU_HEALTH_NEW;
    gpu->faulty = true;
    utf8_copy(gpu->fault, sizeof gpu->fault, fault);
    gpu_health_spread_to_instances(node);
    char why[TIDE_REASON_MAX];
    snprintf(why, sizeof why, GPU_HEALTH_FAULT_PREFIX "GPU %d: %.47s", gpu_index, fault);
    /* a node with no healthy GPU left is as good as gone */
    if (!has_healthy_gpu(node))
        node_wide = true;
    if (node_wide && !(node->drained && !node->probe_drained)) {
        drain(node, why);
        bits |= GPU_HEALTH_DRAINED;
    }
    /* Only a GPU healthy until now counts: one bad GPU repeating itself
     * must not fail a node whose other GPUs are fine. */
    if (bits & GPU_HEALTH_NEW) {
        if (now_ms - node->fault_window_start_ms > cfg->fault_window_ms ||
            !node->faults_in_window) {
            node->fault_window_start_ms = now_ms;
            node->faults_in_window = 0;
        }
        node->faults_in_window++;
    }
    if (cfg->node_fault_limit > 0 && node->faults_in_window >= cfg->node_fault_limit &&
        !node->health_failed) {
        node->health_failed = true;
        char failed[TIDE_REASON_MAX];
        snprintf(failed, sizeof failed, GPU_HEALTH_FAULT_PREFIX "failed: %d faults within %llds",
                 node->faults_in_window, (long long)(cfg->fault_window_ms / 1000));
        drain(node, failed);
        if (!node->pool[0] && (node->state == NODE_DRAINING || node->state == NODE_STOPPING ||
                               node->state == NODE_LOST))
            node->state = NODE_FAILED;
        bits |= GPU_HEALTH_FAILED;
        node_wide = true;
    }
    int rc = stop_jobs(c, node, node_wide ? -1 : gpu_index, why, out);
    return rc ? rc : bits;
}

int gpu_health_clear(struct node *node)
{
    int n = 0;
    for (int g = 0; g < node->ngpus; g++) {
        n += node->gpus[g].faulty;
        node->gpus[g].faulty = false;
        node->gpus[g].fault[0] = '\0';
    }
    node->faults_in_window = 0;
    node->fault_window_start_ms = 0;
    node->health_failed = false;
    node->probe_drained = false;
    return n;
}

int gpu_health_probe(struct node *node, bool ok, const char *output, int64_t now_ms)
{
    if (!ok && !node->drained) {
        char why[TIDE_REASON_MAX];
        snprintf(why, sizeof why, GPU_HEALTH_PROBE_PREFIX "%.130s", output && *output ? output : "no output");
        utf8_trim_tail(why); /* the probe's words, cut: text all the same */
        drain(node, why);
        node->probe_drained = true;
        node->probe_drained_ms = now_ms;
        return 1;
    }
    if (ok && node->drained && node->probe_drained) {
        node->drained = false;
        node->probe_drained = false;
        node->drain_reason[0] = '\0';
        if (node->state == NODE_DRAINING)
            node->state = NODE_READY;
        return -1;
    }
    return 0;
}

int gpu_health_faulty_count(const struct node *node)
{
    int n = 0;
    for (int g = 0; g < node->ngpus; g++)
        n += node->gpus[g].faulty;
    return n;
}
