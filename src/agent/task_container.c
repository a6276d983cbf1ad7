/* Running tasks in containers with podman or docker (task_container.h). */
#include "agent/task_container.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/task.h"
#include "common/log.h"

/* Most bytes read from `RUNTIME images` or a failed pull. */
#define RUNTIME_OUTPUT_MAX (256 * 1024)
/* How much nicer than the agent an image listing runs. */
#define LISTING_NICE 10
/* A label filter: the prefix and an agent's work dir. */
#define PATH_MAX_LABEL 4200

/* "<node>-<hash of the work dir>": what makes this agent's container names
 * its own on a machine that runs other agents (of this cluster or another). */
static char container_scope[AGENT_CONTAINER_NODE_MAX + 16];

void agent_container_set_scope(const char *node_name, const char *work_dir)
{
    /* FNV-1a: stable across runs and builds, so a restarted agent's names
     * are the names its last run used */
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = work_dir ? work_dir : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    char node[AGENT_CONTAINER_NODE_MAX + 1];
    size_t n = 0;
    for (const char *p = node_name ? node_name : ""; *p && n < AGENT_CONTAINER_NODE_MAX; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-';
        node[n++] = ok ? c : '_';
    }
    node[n] = '\0';
    snprintf(container_scope, sizeof container_scope, "%s%s%08" PRIx32, node, n ? "-" : "",
             (uint32_t)(h ^ (h >> 32)));
}

void agent_container_name(int64_t job_id, int64_t attempt, char *out, size_t size)
{
    if (container_scope[0])
        snprintf(out, size, "tide-%s-%" PRId64 "-%" PRId64, container_scope, job_id, attempt);
    else
        snprintf(out, size, "tide-%" PRId64 "-%" PRId64, job_id, attempt);
}

/* A growing argv; a failed allocation is remembered and reported at the end. */
struct argv_buf {
    char **v;
    size_t n, cap;
    bool failed;
};

static void add(struct argv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct argv_buf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    if (b->n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        char **v = realloc(b->v, cap * sizeof *v);
        if (!v) {
            b->failed = true;
            return;
        }
        b->v = v;
        b->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int rc = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (rc < 0) {
        b->failed = true;
        return;
    }
    b->v[b->n++] = s;
    b->v[b->n] = NULL;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* True when an NVIDIA CDI spec is installed in one of dirs (':'-separated). */
static bool nvidia_cdi_present(const char *dirs)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", dirs ? dirs : "/etc/cdi:/var/run/cdi");
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char path[1100];
        snprintf(path, sizeof path, "%s/nvidia.yaml", d);
        if (exists(path))
            return true;
        snprintf(path, sizeof path, "%s/nvidia.json", d);
        if (exists(path))
            return true;
    }
    return false;
}

static void add_gpu_devices(struct argv_buf *b, const struct agent_container_run *r)
{
    if (!r->ngpus)
        return;
    if (nvidia_cdi_present(r->cdi_dirs)) {
        /* nvidia-ctk names an instance "<gpu>:<mig>" and by its UUID; tide
         * numbers instances after the whole GPUs, so its index would name
         * no device, or another whole GPU. Whole GPUs keep their index:
         * older nvidia-ctk specs name devices by index alone by default */
        for (size_t i = 0; i < r->ngpus; i++) {
            const char *uuid = r->gpu_uuids ? r->gpu_uuids[i] : NULL;
            if (uuid && !strncmp(uuid, "MIG-", 4))
                add(b, "--device=nvidia.com/gpu=%s", uuid);
            else
                add(b, "--device=nvidia.com/gpu=%d", r->gpus[i]);
        }
        return;
    }
    const char *dev = r->dev_dir ? r->dev_dir : "/dev";
    char path[512];
    bool any = false;
    for (size_t i = 0; i < r->ngpus; i++) {
        int minor = r->gpu_minors ? r->gpu_minors[i] : r->gpus[i];
        if (minor < 0)
            continue; /* a MIG instance: its GPU is given by CDI alone */
        snprintf(path, sizeof path, "%s/nvidia%d", dev, minor);
        if (exists(path)) {
            add(b, "--device=%s", path);
            any = true;
        }
    }
    /* fake GPUs have no device nodes, and then neither is there a driver */
    static const char *const control[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                                          "nvidia-modeset"};
    for (size_t i = 0; any && i < sizeof control / sizeof control[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dev, control[i]);
        if (exists(path))
            add(b, "--device=%s", path);
    }
}

char **agent_container_argv(const struct agent_container_run *r)
{
    struct argv_buf b = {0};
    add(&b, "%s", r->runtime);
    add(&b, "run");
    add(&b, "--rm");
    add(&b, "--name=%s", r->name);
    /* a small init as PID 1 passes the stop signal on to the command and
     * reaps what it leaves behind */
    add(&b, "--init");
    /* jobs reach each other (gang ranks, services) as bare processes do */
    add(&b, "--network=host");
    /* a setuid file of the image (or one a job left) gains nothing, and a
     * job user has no capability root would (its files, its devices) */
    add(&b, "--security-opt=no-new-privileges");
    if (r->user) {
        add(&b, "--user=%s", r->user);
        if (strncmp(r->user, "0:", 2) != 0)
            add(&b, "--cap-drop=ALL");
    }
    add(&b, "--label=tide.job=%s", r->name);
    if (r->owner)
        add(&b, "--label=tide.agent=%s", r->owner);
    if (r->env_file)
        add(&b, "--env-file=%s", r->env_file); /* values stay off the command line (ps) */
    add(&b, "--volume=%s:%s", r->job_dir, r->job_dir);
    if (r->checkpoint_dir)
        add(&b, "--volume=%s:%s", r->checkpoint_dir, r->checkpoint_dir);
    for (size_t i = 0; i < r->nmounts; i++)
        add(&b, "--volume=%s", r->mounts[i]);
    add(&b, "--workdir=%s", r->workdir ? r->workdir : r->job_dir);
    if (r->memory_mib > 0)
        add(&b, "--memory=%" PRId64 "m", r->memory_mib);
    if (r->cpus > 0)
        add(&b, "--cpus=%d", r->cpus);
    add_gpu_devices(&b, r);
    add(&b, "%s", r->image);
    for (char **c = r->command; c && *c; c++)
        add(&b, "%s", *c);
    if (b.failed) {
        agent_container_argv_free(b.v);
        return NULL;
    }
    return b.v;
}

char **agent_container_task_argv(const struct agent_task_spec *spec, const char *runtime,
                                 const char *name, const char *owner, const char *job_dir,
                                 const char *env_file)
{
    struct agent_container_run r = {
        .runtime = runtime,
        .name = name,
        .owner = owner,
        .image = spec->image,
        .command = spec->command,
        .env_file = env_file,
        .mounts = spec->mounts,
        .nmounts = spec->nmounts,
        .job_dir = job_dir,
        .checkpoint_dir = spec->checkpoint_dir,
        .workdir = spec->workdir,
        .gpus = spec->gpus,
        .gpu_minors = spec->gpu_minors,
        .gpu_uuids = spec->gpu_uuids,
        .ngpus = spec->ngpus,
        .memory_mib = spec->memory_mib,
        .cpus = spec->cpus,
    };
    /* The runtime runs as the agent (a rootless runtime would need the job
     * user's own setup); the job's processes run as its user inside. */
    char user[48];
    if (spec->run_as && spec->run_as->change) {
        snprintf(user, sizeof user, "%u:%u", (unsigned)spec->run_as->uid,
                 (unsigned)spec->run_as->gid);
        r.user = user;
    }
    return agent_container_argv(&r);
}

void agent_container_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

/* Runs argv with stdin from /dev/null; stdout into *out (new, NUL-ended,
 * at most RUNTIME_OUTPUT_MAX bytes) when out is not NULL, else discarded;
 * stderr with stdout. Returns the exit status, or -1. */
static int run_capture(char *const argv[], char **out)
{
    int pipefd[2] = {-1, -1};
    if (out && pipe2(pipefd, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int null_fd = open("/dev/null", O_RDWR);
        if (null_fd >= 0) {
            dup2(null_fd, 0);
            dup2(out ? pipefd[1] : null_fd, 1);
            dup2(out ? pipefd[1] : null_fd, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    if (out)
        close(pipefd[1]);
    if (pid < 0) {
        if (out)
            close(pipefd[0]);
        return -1;
    }
    char *buf = NULL;
    size_t len = 0;
    if (out) {
        buf = malloc(RUNTIME_OUTPUT_MAX + 1);
        ssize_t r = 0;
        while (buf && len < RUNTIME_OUTPUT_MAX &&
               ((r = read(pipefd[0], buf + len, RUNTIME_OUTPUT_MAX - len)) > 0 ||
                (r < 0 && errno == EINTR)))
            if (r > 0)
                len += (size_t)r;
        /* drain what does not fit, so the child is not blocked on a full pipe */
        char sink[4096];
        while ((r = read(pipefd[0], sink, sizeof sink)) > 0 || (r < 0 && errno == EINTR))
            ;
        close(pipefd[0]);
        if (buf)
            buf[len] = '\0';
        *out = buf;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs argv in the background: a child forks the command and exits at
 * once, so the agent reaps the child now and init reaps the command. */
static void run_detached(char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        setsid(); /* out of the agent's group: a kill of it spares the cleanup */
        pid_t inner = fork();
        if (inner == 0) {
            int null_fd = open("/dev/null", O_RDWR);
            if (null_fd >= 0) {
                dup2(null_fd, 0);
                dup2(null_fd, 1);
                dup2(null_fd, 2);
            }
            execvp(argv[0], argv);
            _exit(127);
        }
        _exit(inner < 0 ? 1 : 0);
    }
    if (pid < 0) {
        log_warn("cannot run %s %s: %s", argv[0], argv[1], strerror(errno));
        return;
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

bool agent_container_start_failure(const char *runtime, int exit_code, char *why, size_t n)
{
    const char *what = exit_code == 125   ? "could not create the container (see the job's log: "
                                            "an image it cannot pull, a bad mount, ...)"
                       : exit_code == 126 ? "the command cannot be run in the image"
                       : exit_code == 127 ? "the command is not in the image"
                                          : NULL;
    if (!what)
        return false;
    snprintf(why, n, "start failed: %s exit %d: %s", runtime, exit_code, what);
    return true;
}

void agent_container_signal(const char *runtime, const char *name, int sig)
{
    char signal_arg[32];
    snprintf(signal_arg, sizeof signal_arg, "--signal=%d", sig);
    char *argv[] = {(char *)runtime, "kill", signal_arg, (char *)name, NULL};
    run_detached(argv);
}

/* RUNTIME rm --force [--time=0] NAME into argv (6 slots): podman's --force
 * stops with the container's stop timeout unless --time=0; docker's kills
 * at once and has no --time (it would refuse the whole call). */
static void rm_argv(const char *runtime, const char *name, char *argv[6])
{
    const char *base = strrchr(runtime, '/') ? strrchr(runtime, '/') + 1 : runtime;
    int n = 0;
    argv[n++] = (char *)runtime;
    argv[n++] = "rm";
    argv[n++] = "--force";
    if (strcmp(base, "docker") != 0)
        argv[n++] = "--time=0";
    argv[n++] = (char *)name;
    argv[n] = NULL;
}

void agent_container_remove(const char *runtime, const char *name)
{
    char *argv[6];
    rm_argv(runtime, name, argv);
    run_detached(argv);
}

bool agent_container_on_path(const char *program)
{
    if (!program || !*program)
        return false;
    if (strchr(program, '/'))
        return access(program, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char full[4096];
        /* an empty entry is the current directory */
        int w = snprintf(full, sizeof full, "%.*s%s%s", (int)len, len ? p : ".", "/", program);
        struct stat st;
        if (w > 0 && (size_t)w < sizeof full && access(full, X_OK) == 0 && stat(full, &st) == 0 &&
            S_ISREG(st.st_mode))
            return true;
        if (!end)
            return false;
        p = end + 1;
    }
}

const char *agent_container_runtime_find(const char *given)
{
    if (given)
        return agent_container_on_path(given) ? given : NULL;
    if (agent_container_on_path("podman"))
        return "podman";
    if (agent_container_on_path("docker"))
        return "docker";
    return NULL;
}

char **agent_container_images_parse(const char *text, size_t max)
{
    char *copy = strdup(text ? text : "");
    char **names = copy ? calloc(max + 1, sizeof *names) : NULL;
    size_t n = 0;
    char *save = NULL;
    for (char *line = names ? strtok_r(copy, "\n", &save) : NULL; line && n < max;
         line = strtok_r(NULL, "\n", &save)) {
        if (!*line || strstr(line, "<none>"))
            continue; /* untagged layers are no image a job can name */
        if (!(names[n] = strdup(line))) {
            agent_container_argv_free(names);
            names = NULL;
            break;
        }
        n++;
    }
    free(copy);
    return names;
}

char **agent_container_images(const char *runtime, size_t max)
{
    char *argv[] = {(char *)runtime, "images", "--format", "{{.Repository}}:{{.Tag}}", NULL};
    char *text = NULL;
    if (run_capture(argv, &text) != 0 || !text) {
        free(text);
        return NULL;
    }
    char **names = agent_container_images_parse(text, max);
    free(text);
    return names;
}

pid_t agent_container_images_spawn(const char *runtime, int *fd)
{
    *fd = -1;
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return -1;
    char *argv[] = {(char *)runtime, "images", "--format", "{{.Repository}}:{{.Tag}}", NULL};
    pid_t pid = fork();
    if (pid == 0) {
        /* background work: the agent's loop and its tasks go first (an
         * agent starting beside others would otherwise share the CPU with
         * every one's runtime). Nicer, not SCHED_IDLE: an idle-class
         * process starves on a busy machine, and one starved while it holds
         * a kernel lock a task start needs (forking its threads holds the
         * one a cgroup join waits for) stalls that start with it */
        errno = 0;
        int prio = getpriority(PRIO_PROCESS, 0);
        if (errno == 0)
            setpriority(PRIO_PROCESS, 0, prio + LISTING_NICE > 19 ? 19 : prio + LISTING_NICE);
        int null_fd = open("/dev/null", O_RDWR);
        if (null_fd >= 0) {
            dup2(null_fd, 0);
            dup2(null_fd, 2); /* warnings are no image names */
        }
        dup2(pipefd[1], 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pipefd[1]);
    if (pid < 0 || fcntl(pipefd[0], F_SETFL, O_NONBLOCK) != 0) {
        close(pipefd[0]);
        if (pid > 0) {
            kill(pid, SIGKILL);
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        }
        return -1;
    }
    *fd = pipefd[0];
    return pid;
}

int agent_container_remove_leftovers(const char *runtime, const char *owner)
{
    char filter[PATH_MAX_LABEL];
    snprintf(filter, sizeof filter, "label=tide.agent=%s", owner);
    char *ps[] = {(char *)runtime, "ps", "--all", "--quiet", "--filter", filter, NULL};
    char *text = NULL;
    if (run_capture(ps, &text) != 0 || !text) {
        free(text);
        return -1;
    }
    int n = 0;
    char *save = NULL;
    for (char *id = strtok_r(text, " \n", &save); id; id = strtok_r(NULL, " \n", &save)) {
        char *rm[6];
        rm_argv(runtime, id, rm);
        if (run_capture(rm, NULL) != 0)
            log_warn("cannot remove leftover container %s", id);
        n++;
    }
    free(text);
    return n;
}

int agent_container_prewarm(const char *runtime, const char *image, char *why, size_t n)
{
    char *inspect[] = {(char *)runtime, "image", "inspect", (char *)image, NULL};
    if (run_capture(inspect, NULL) == 0)
        return 0;
    char *pull[] = {(char *)runtime, "pull", "--quiet", (char *)image, NULL};
    char *text = NULL;
    int rc = run_capture(pull, &text);
    if (rc != 0) {
        /* the runtime's last line says why */
        size_t len = text ? strlen(text) : 0;
        while (len && text[len - 1] == '\n')
            text[--len] = '\0';
        const char *last = text ? strrchr(text, '\n') : NULL;
        snprintf(why, n, "%s pull %s: %s", runtime, image,
                 last ? last + 1 : text && *text ? text : "failed");
    }
    free(text);
    return rc == 0 ? 0 : -1;
}
