/* The backend-independent part of gpu.h: opening, empty nodes, lookup. */
#include "agent/gpu.h"

#include <stdio.h>
#include <string.h>

bool gpu_xid_is_a_programs(unsigned long long xid)
{
    return xid == 13 || xid == 31 || xid == 43 || xid == 45;
}

int gpu_backend_open(struct gpu_backend *be, const struct gpu_ops *ops, const char *spec,
                     const char *node_name, struct tide_err *err)
{
    memset(be, 0, sizeof *be);
    be->ops = ops;
    int rc = ops->open(be, spec, node_name, err);
    if (rc != 0) {
        /* open cleans up after itself; leave nothing for release to touch */
        memset(be, 0, sizeof *be);
        return rc;
    }
    return 0;
}

void gpu_backend_init_empty(struct gpu_backend *be, const char *driver)
{
    memset(be, 0, sizeof *be);
    snprintf(be->driver, sizeof be->driver, "%s", driver);
}

void gpu_backend_release(struct gpu_backend *be)
{
    if (!be)
        return;
    if (be->ops && be->ops->close)
        be->ops->close(be);
    memset(be, 0, sizeof *be);
}

const struct gpu_device *gpu_backend_find(const struct gpu_backend *be, int index)
{
    for (size_t i = 0; i < be->count; i++)
        if (be->devices[i].index == index)
            return &be->devices[i];
    return NULL;
}

int gpu_backend_minor_of(const struct gpu_backend *be, int index)
{
    const struct gpu_device *d = gpu_backend_find(be, index);
    if (d && d->parent_index >= 0)
        d = gpu_backend_find(be, d->parent_index);
    return d ? d->minor : -1;
}

size_t gpu_backend_denied_minors(const struct gpu_backend *be, const int *gpus, size_t n,
                                 int *deny)
{
    size_t k = 0;
    for (size_t i = 0; i < be->count; i++) {
        const struct gpu_device *d = &be->devices[i];
        if (d->parent_index >= 0 || d->minor < 0)
            continue;
        bool held = false;
        for (size_t j = 0; j < n && !held; j++)
            held = gpu_backend_minor_of(be, gpus[j]) == d->minor;
        if (!held)
            deny[k++] = d->minor;
    }
    return k;
}
