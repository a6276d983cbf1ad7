/* The agent's runtime, prewarmed images and image list (agent_images.h). */
#include "agent/agent_images.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "agent/task_container.h"
#include "common/fsutil.h"
#include "common/log.h"

/* Most image names listed and reported; the server keeps fewer. */
#define AGENT_MAX_IMAGES 1024
/* After a containerised task started, list again this much later (its pull
 * has usually finished by then). */
#define AGENT_IMAGES_STALE_MS 2000

static void list_images(struct agent *a, int64_t now_ms)
{
    char **names = agent_container_images(a->container_runtime, AGENT_MAX_IMAGES);
    a->images_at_ms = now_ms ? now_ms : 1;
    a->images_stale = false;
    if (!names) {
        log_warn("cannot list images with %s; keeping the last list", a->container_runtime);
        return;
    }
    agent_container_argv_free(a->images);
    a->images = names;
}

void agent_images_start(struct agent *a, int64_t now_ms)
{
    a->container_runtime = agent_container_runtime_find(a->opts->container_runtime);
    if (!a->container_runtime) {
        if (a->opts->container_runtime)
            log_error("--container-runtime %s does not run: jobs with an image will fail to start",
                      a->opts->container_runtime);
        else
            log_info("no podman or docker: jobs with an image will fail to start here");
        return;
    }
    log_info("containers run with %s", a->container_runtime);
    /* this agent's tasks died with its last run; their containers did not.
     * Every task's directory is made under WORK/jobs before it starts: a
     * work dir without one never ran a task, and the runtime is asked
     * nothing (one call fewer before registering; a runtime's calls take a
     * lock that the agents of one machine queue on). */
    char jobs[PATH_MAX];
    struct stat st;
    int w = snprintf(jobs, sizeof jobs, "%s/jobs", a->work_dir);
    bool ran = w < 0 || (size_t)w >= sizeof jobs || lstat(jobs, &st) == 0 || errno != ENOENT;
    int left = ran ? agent_container_remove_leftovers(a->container_runtime, a->work_dir) : 0;
    if (left > 0)
        log_info("removed %d container(s) left by an earlier run of this agent", left);
    else if (left < 0)
        log_warn("cannot list containers left by an earlier run with %s ps", a->container_runtime);
    for (size_t i = 0; i < a->opts->nprewarm; i++) {
        const char *image = a->opts->prewarm_images[i];
        int64_t t0 = clock_mono_ms();
        char why[512];
        if (agent_container_prewarm(a->container_runtime, image, why, sizeof why) != 0)
            log_warn("prewarm %s failed: %s", image, why);
        else
            log_info("prewarm %s: held after %lld ms", image, (long long)(clock_mono_ms() - t0));
    }
    list_images(a, now_ms);
}

void agent_images_refresh(struct agent *a, int64_t now_ms)
{
    if (!a->container_runtime)
        return;
    int64_t age = now_ms - a->images_at_ms;
    if (age >= AGENT_IMAGES_REFRESH_MS || (a->images_stale && age >= AGENT_IMAGES_STALE_MS))
        list_images(a, now_ms);
}

json_t *agent_images_json(const struct agent *a)
{
    if (!a->container_runtime)
        return NULL;
    json_t *list = json_array();
    for (char **p = a->images; list && p && *p; p++)
        if (json_array_append_new(list, json_string(*p)) != 0) {
            json_decref(list);
            return NULL;
        }
    return list;
}

void agent_images_release(struct agent *a)
{
    agent_container_argv_free(a->images);
    a->images = NULL;
}
