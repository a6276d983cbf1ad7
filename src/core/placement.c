/* Shared placement helpers and the table of strategies. */
#include "core/placement.h"

#include <fnmatch.h>
#include <string.h>
#include <strings.h>

#include "core/core_banned.h"

static const struct placement_ops *const strategies[] = {&placement_loadaware};

const struct placement_ops *placement_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
        if (!strcmp(strategies[i]->name, name))
            return strategies[i];
    return NULL;
}

void placement_config_defaults(struct placement_config *cfg)
{
    cfg->max_gpu_memory_used_pct = 80;
    cfg->max_gpu_utilization_pct = 90;
}

bool placement_gpu_matches(const struct gpu *g, const struct job *job)
{
    if (job->gpu_memory_mib > 0 && g->memory_total_mib < job->gpu_memory_mib)
        return false;
    if (!job->gpu_model[0])
        return true;
    /* NVML calls an H200 "NVIDIA H200"; users write "H200*". Accept both. */
    const char *name = g->name;
    if (fnmatch(job->gpu_model, name, FNM_CASEFOLD) == 0)
        return true;
    if (!strncasecmp(name, "NVIDIA ", 7) && fnmatch(job->gpu_model, name + 7, FNM_CASEFOLD) == 0)
        return true;
    return false;
}
