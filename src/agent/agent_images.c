/* The agent's runtime, prewarmed images and image list (agent_images.h). */
#include "agent/agent_images.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/task_container.h"
#include "common/fsutil.h"
#include "common/log.h"

/* Most image names listed and reported; the server keeps fewer. */
#define AGENT_MAX_IMAGES 1024
/* After a containerised task started, list again this much later (its pull
 * has usually finished by then). */
#define AGENT_IMAGES_STALE_MS 2000
/* Most bytes of a listing kept; the rest is read and dropped. */
#define LISTING_MAX (256 * 1024)
/* What a child exits with when it could not exec the runtime. */
#define EXIT_NOT_RUN 127

/* Takes names as the list; true when it is news to the server (the first
 * list, or one that differs from the last). */
static bool take_list(struct agent *a, char **names)
{
    size_t n = 0;
    while (names[n])
        n++;
    bool news = !a->images; /* NULL until a listing has succeeded */
    for (size_t i = 0; !news && i <= n; i++)
        news = !names[i] != !a->images[i] || (names[i] && strcmp(names[i], a->images[i]));
    if (!a->images)
        log_info("%s holds %zu image(s)", a->container_runtime, n);
    agent_container_argv_free(a->images);
    a->images = names;
    return news;
}

static void listing_start(struct agent *a, int64_t now_ms)
{
    a->images_at_ms = now_ms ? now_ms : 1;
    a->images_stale = false;
    a->images_len = 0;
    int fd = -1;
    pid_t pid = agent_container_images_spawn(a->container_runtime, &fd);
    if (pid < 0) {
        log_warn("cannot start %s images: %s; keeping the last list", a->container_runtime,
                 strerror(errno));
        return;
    }
    a->images_pid = pid;
    a->images_fd = fd;
}

/* Reads what the listing has written, without blocking; closes its
 * descriptor at EOF (or on an error). */
static void listing_read(struct agent *a)
{
    if (!a->images_out && !(a->images_out = malloc(LISTING_MAX + 1))) {
        log_warn("out of memory reading %s images", a->container_runtime);
        return; /* the child's exit ends it */
    }
    for (;;) {
        char sink[4096];
        bool room = a->images_len < LISTING_MAX;
        ssize_t r = room ? read(a->images_fd, a->images_out + a->images_len,
                                LISTING_MAX - a->images_len)
                         : read(a->images_fd, sink, sizeof sink);
        if (r > 0) {
            if (room)
                a->images_len += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        close(a->images_fd);
        a->images_fd = -1;
        return;
    }
}

/* The listing's child exited with code (-1: by a signal); true when a
 * list that is news was taken. */
static bool listing_done(struct agent *a, int code, int64_t now_ms)
{
    bool taken = false;
    if (code == 0 && a->images_out) {
        a->images_out[a->images_len] = '\0';
        char **names = agent_container_images_parse(a->images_out, AGENT_MAX_IMAGES);
        if (names)
            taken = take_list(a, names);
        else
            log_warn("out of memory listing images; keeping the last list");
    } else if (code == EXIT_NOT_RUN && !a->images) {
        /* its first call: the runtime found on PATH does not run */
        const char *was = a->container_runtime;
        if (a->opts->container_runtime) {
            log_error("--container-runtime %s does not run: jobs with an image will fail to start",
                      was);
            a->container_runtime = NULL;
        } else if (!strcmp(was, "podman") && agent_container_on_path("docker")) {
            log_warn("podman does not run; containers run with docker");
            a->container_runtime = "docker";
            listing_start(a, now_ms);
        } else {
            log_error("%s does not run: jobs with an image will fail to start", was);
            a->container_runtime = NULL;
        }
    } else {
        log_warn("%s images exited %d; keeping the last list", a->container_runtime, code);
    }
    free(a->images_out);
    a->images_out = NULL;
    a->images_len = 0;
    return taken;
}

int agent_images_fd(const struct agent *a)
{
    return a->images_pid > 0 ? a->images_fd : -1;
}

bool agent_images_poll(struct agent *a, int64_t now_ms)
{
    if (a->images_pid <= 0)
        return false;
    if (a->images_fd >= 0)
        listing_read(a);
    int status;
    pid_t r = waitpid(a->images_pid, &status, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR))
        return false; /* still running: its output or its SIGCHLD wakes the loop */
    a->images_pid = 0;
    if (a->images_fd >= 0) {
        /* what it wrote before it exited; a descendant holding the pipe
         * open does not hold the listing up */
        listing_read(a);
        if (a->images_fd >= 0)
            close(a->images_fd);
        a->images_fd = -1;
    }
    int code = r > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return listing_done(a, code, now_ms);
}

void agent_images_start(struct agent *a, int64_t now_ms)
{
    a->images_fd = -1;
    agent_container_set_scope(a->opts->name, a->work_dir);
    a->container_runtime = agent_container_runtime_find(a->opts->container_runtime);
    if (!a->container_runtime) {
        if (a->opts->container_runtime)
            log_error("--container-runtime %s is not an executable (nor one on PATH): jobs with "
                      "an image will fail to start",
                      a->opts->container_runtime);
        else
            log_info("no podman or docker: jobs with an image will fail to start here");
        return;
    }
    log_info("containers run with %s", a->container_runtime);
    /* this agent's tasks died with its last run; their containers did not.
     * With some, the leftovers go before the node registers, so none is
     * left when a task of its job could start again. */
    int left = agent_work_ran_tasks(a->work_dir)
                   ? agent_container_remove_leftovers(a->container_runtime, a->work_dir)
                   : 0;
    if (left > 0)
        log_info("removed %d container(s) left by an earlier run of this agent", left);
    else if (left < 0)
        log_warn("cannot list containers left by an earlier run with %s ps", a->container_runtime);
    if (!a->opts->nprewarm) {
        /* a heartbeat starts it once due and the loop takes the list once
         * it is in: an agent that starts beside others (a new cluster, a
         * machine's reboot) registers and starts its first tasks before its
         * runtime competes with theirs, and a busy node lists once it is
         * idle (a listing costs tens of ms of CPU and the runtime's lock;
         * run beside a wave of task transitions it delays them) or 30 s on */
        a->images_begun_ms = now_ms;
        return;
    }
    /* prewarming holds the registration anyway: the list goes with it */
    for (size_t i = 0; i < a->opts->nprewarm; i++) {
        const char *image = a->opts->prewarm_images[i];
        int64_t t0 = clock_mono_ms();
        char why[512];
        if (agent_container_prewarm(a->container_runtime, image, why, sizeof why) != 0)
            log_warn("prewarm %s failed: %s", image, why);
        else
            log_info("prewarm %s: held after %lld ms", image, (long long)(clock_mono_ms() - t0));
    }
    a->images_at_ms = now_ms ? now_ms : 1;
    char **names = agent_container_images(a->container_runtime, AGENT_MAX_IMAGES);
    if (names)
        take_list(a, names);
    else
        log_warn("cannot list images with %s", a->container_runtime);
}

void agent_images_refresh(struct agent *a, int64_t now_ms)
{
    if (a->images_pid > 0 && now_ms - a->images_at_ms >= AGENT_IMAGES_REFRESH_MS) {
        /* a runtime stuck on its lock would hold every later listing up:
         * stopped, it is reaped as any listing (keeping the last list),
         * and the next one is due a refresh later */
        log_warn("%s images still running after %d s; stopped", a->container_runtime,
                 AGENT_IMAGES_REFRESH_MS / 1000);
        kill(a->images_pid, SIGKILL);
        a->images_at_ms = now_ms;
    }
    if (!a->container_runtime || a->images_pid > 0)
        return;
    if (!a->images_at_ms) { /* never listed: see agent.h */
        int64_t since = now_ms - a->images_begun_ms;
        if (since >= AGENT_IMAGES_FIRST_DELAY_MS &&
            (agent_running_tasks(a) == 0 || since >= AGENT_IMAGES_REFRESH_MS))
            listing_start(a, now_ms);
        return;
    }
    int64_t age = now_ms - a->images_at_ms;
    if (age >= AGENT_IMAGES_REFRESH_MS || (a->images_stale && age >= AGENT_IMAGES_STALE_MS))
        listing_start(a, now_ms);
}

json_t *agent_images_json(const struct agent *a)
{
    if (!a->container_runtime || !a->images)
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
    if (a->images_pid > 0) {
        kill(a->images_pid, SIGKILL);
        while (waitpid(a->images_pid, NULL, 0) < 0 && errno == EINTR)
            ;
        if (a->images_fd >= 0)
            close(a->images_fd);
        a->images_pid = 0;
        a->images_fd = -1;
    }
    free(a->images_out);
    a->images_out = NULL;
    agent_container_argv_free(a->images);
    a->images = NULL;
}
