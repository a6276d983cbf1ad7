/*
 * Starting, stopping and reaping one task (task.h). The child is made with
 * vfork: it borrows the agent's address space until its exec instead of
 * copying the page tables (and throwing the copy away at exec), which was
 * most of the agent's CPU per task. So everything the child needs is
 * prepared before, and the child itself (child_run) writes nothing of the
 * parent's memory but its own stack frames and errno (the suspended
 * thread's), takes no lock, allocates nothing and calls only
 * async-signal-safe functions or raw system calls. No parent signal handler
 * can run in it: every signal is blocked around the vfork and the child
 * puts each caught one back to its default before it unblocks.
 */
#include "agent/task.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/leftovers.h"
#include "agent/log_spares.h"
#include "agent/task_env.h"
#include "agent/task_env_file.h"
#include "agent/task_exec.h"
#include "common/log.h"
#include "common/utf8.h"
#include "core/image_ref.h"

extern char **environ;

/* What the child reports through its close-on-exec pipe when it fails
 * before exec; a successful exec closes the pipe with nothing written. */
enum child_stage {
    STAGE_CHDIR = 1,
    STAGE_EXEC = 2,
    STAGE_SETUP = 3,
    STAGE_CGROUP = 4,
    STAGE_USER = 5,
};
struct child_failure {
    int stage;
    int err;
};

static char *path_join(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A new string from fmt, or NULL when out of memory. */
static char *path_join(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

/* Appends line to the task's log, so the job's own output explains why it
 * never ran. Failures here only lose that explanation. */
static void log_append_line(const char *path, const char *line)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    size_t len = strlen(line);
    ssize_t w = write(fd, line, len);
    if (w < 0 || (size_t)w != len)
        log_warn("log %s: short write", path);
    close(fd);
}

/* Makes the directory at path (never a link) the run-as user's, mode 0700
 * (already so when made now: mkdir's 0700 is only narrowed by the umask).
 * Nothing to do without a switch. 0 or -errno. */
static int give_dir(const char *path, const struct agent_run_as *r, bool made_0700)
{
    if (!r || !r->change)
        return 0;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int e = fchown(fd, r->uid, r->gid) != 0 || (!made_0700 && fchmod(fd, 0700) != 0) ? -errno : 0;
    close(fd);
    return e;
}

/* The logs directory last made or found, so that each start after the
 * first skips its mkdir (a log that cannot be opened makes it again). */
static char *logs_dir_known;

/* Makes sure logs_dir exists, with a mkdir only the first time (or when
 * again is set). 0 or -errno. */
static int ensure_logs_dir(const char *logs_dir, bool again)
{
    if (!again && logs_dir_known && !strcmp(logs_dir_known, logs_dir))
        return 0;
    bool made;
    int e = dir_spares_make(NULL, logs_dir, 0711, &made); /* no pool: a mkdir */
    if (e == 0 && (!logs_dir_known || strcmp(logs_dir_known, logs_dir))) {
        free(logs_dir_known);
        logs_dir_known = strdup(logs_dir); /* NULL only costs a mkdir next time */
    }
    return e;
}

/* /dev/null, opened once for every task's stdin (close-on-exec: only the
 * children's dup2 passes it on); -1 with errno when it cannot be. */
static int dev_null(void)
{
    static int fd = -1;
    if (fd < 0)
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd;
}

/* The agent's pid, asked once (glibc keeps no copy: a system call each
 * time), for the children's check that they were not orphaned. */
static pid_t agent_pid(void)
{
    static pid_t pid;
    if (!pid)
        pid = getpid();
    return pid;
}

/* Who owns a task's log: the run-as user's, else the agent's (asked once). */
static uid_t log_owner(const struct agent_run_as *r)
{
    static uid_t agent_uid = (uid_t)-1;
    if (r && r->change)
        return r->uid;
    if (agent_uid == (uid_t)-1)
        agent_uid = geteuid();
    return agent_uid;
}

/* Marks t as exited without a process having run. */
static void fail_start(struct agent_task *t, const char *why)
{
    t->state = AGENT_TASK_EXITED;
    t->has_exit_code = false;
    t->has_signal = false;
    snprintf(t->reason, sizeof t->reason, "start failed: %s", why);
    utf8_trim_tail(t->reason); /* a long path, cut: still text */
    if (t->log_path) {
        char line[320];
        snprintf(line, sizeof line, "tide: %s\n", t->reason);
        log_append_line(t->log_path, line);
    }
}

/* "a,b,c" of the task's GPUs: indices, or the given UUIDs. New string. */
static char *visible_devices(const struct agent_task_spec *spec, bool by_index)
{
    size_t cap = 1;
    for (size_t i = 0; i < spec->ngpus; i++)
        cap += (spec->gpu_uuids ? strlen(spec->gpu_uuids[i]) : 0) + 13;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t n = 0;
    s[0] = '\0';
    for (size_t i = 0; i < spec->ngpus; i++) {
        const char *sep = i ? "," : "";
        /* a MIG instance has no index CUDA knows: always its UUID */
        bool mig = spec->gpu_uuids && !strncmp(spec->gpu_uuids[i], "MIG-", 4);
        if ((by_index && !mig) || !spec->gpu_uuids)
            n += (size_t)snprintf(s + n, cap - n, "%s%d", sep, spec->gpus[i]);
        else
            n += (size_t)snprintf(s + n, cap - n, "%s%s", sep, spec->gpu_uuids[i]);
    }
    return s;
}

/* The variables tide sets for a task, as "NAME=VALUE" strings (new). */
static int tide_vars(const struct agent_task_spec *spec, const struct agent_task_site *site,
                     const char *job_dir, const char *telemetry_file,
                     const struct agent_cgroup *cgroup, char **vars, size_t *n)
{
    char *devices = visible_devices(spec, site->visible_by_index);
    if (!devices)
        return TIDE_ENOMEM;
    size_t k = 0;
    vars[k++] = path_join("CUDA_VISIBLE_DEVICES=%s", devices);
    vars[k++] = path_join("NVIDIA_VISIBLE_DEVICES=%s", devices);
    vars[k++] = path_join("TIDE_JOB_ID=%" PRId64, spec->job_id);
    vars[k++] = path_join("TIDE_ATTEMPT=%" PRId64, spec->attempt);
    vars[k++] = path_join("TIDE_WORK_DIR=%s", job_dir);
    if (telemetry_file)
        vars[k++] = path_join("TIDE_FAKE_GPU_FILE=%s", telemetry_file);
    if (spec->gpu_memory_limit_mib > 0) {
        /* MPS's per-device limit: device 0 is the task's one visible GPU */
        vars[k++] = path_join("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%" PRId64 "MB",
                              spec->gpu_memory_limit_mib);
        vars[k++] = path_join("TIDE_GPU_MEMORY_LIMIT_MIB=%" PRId64, spec->gpu_memory_limit_mib);
    }
    /* only a limit the kernel enforces is announced */
    if (cgroup && cgroup->memory_limited)
        vars[k++] = path_join("TIDE_MEMORY_LIMIT_MIB=%" PRId64, cgroup->memory_mib);
    /* The server's directory, the same for every attempt, so a job that
     * saved its state there resumes wherever it runs next. */
    vars[k++] = spec->checkpoint_dir ? path_join("TIDE_CHECKPOINT_DIR=%s", spec->checkpoint_dir)
                                     : path_join("TIDE_CHECKPOINT_DIR=%s/checkpoint", job_dir);
    /* the agent's own HOME (root's) is not the job's */
    if (spec->run_as && spec->run_as->change) {
        vars[k++] = path_join("HOME=%s", spec->run_as->home);
        vars[k++] = path_join("USER=%s", spec->run_as->name);
        vars[k++] = path_join("LOGNAME=%s", spec->run_as->name);
    }
    free(devices);
    *n = k;
    for (size_t i = 0; i < k; i++)
        if (!vars[i])
            return TIDE_ENOMEM;
    return 0;
}

/* What the child needs, prepared by the parent; the child only reads it. */
struct child_args {
    const struct agent_task_spec *spec;
    const char *cwd;
    char **envp;
    const char *exec_path; /* where PATH leads spec->command[0]; NULL: search */
    const struct agent_task_signals *sigs; /* the agent's caught signals */
    int log_fd, null_fd, report_fd, cgroup_fd, devices_fd;
    int keep_fd; /* passed on to the program (a container's env file); -1: none */
    pid_t parent;
};

/* Programs found on PATH, for the vfork children (only agent_task_start's
 * thread uses it). */
static struct agent_exec_cache exec_cache;

/* In the child, first: every signal the agent catches goes back to its
 * default, so no handler of the agent's can run on its memory (they come
 * in blocked). SIGPIPE, which the agent ignores, is the task's to see (it
 * is in the set). The set was read by the parent (task_exec.h). */
static void child_reset_signals(const struct agent_task_signals *sigs)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sigs->n; i++)
        sigaction(sigs->sigs[i], &dfl, NULL);
}

/* The child between vfork and exec: see the top of this file for what it
 * may do. */
__attribute__((noreturn)) static void child_run(const struct child_args *a)
{
    const struct agent_task_spec *spec = a->spec;
    struct child_failure f = {STAGE_SETUP, 0};
    child_reset_signals(a->sigs);
    setpgid(0, 0);
    /* before anything the task could allocate or fork */
    if ((a->cgroup_fd >= 0 && (f.err = -agent_cgroup_join(a->cgroup_fd)) != 0) ||
        (a->devices_fd >= 0 && (f.err = -agent_cgroup_join(a->devices_fd)) != 0)) {
        f.stage = STAGE_CGROUP;
        goto fail;
    }
    /* the job's user from here on: its workdir is entered with its rights */
    if ((f.err = agent_run_as_enter(spec->run_as)) != 0) {
        f.stage = STAGE_USER;
        goto fail;
    }
    /* the task must not outlive the agent (a node death is a kill -9);
     * after the switch, which clears this setting */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != a->parent)
        _exit(127);
    /* the task starts with nothing blocked, whatever the agent blocks */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(a->null_fd, 0) < 0 || dup2(a->log_fd, 1) < 0 || dup2(a->log_fd, 2) < 0) {
        f.err = errno;
        goto fail;
    }
    /* descriptors the agent holds (sockets of libcurl, the guard's pipe)
     * are not the task's business */
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    if (a->keep_fd >= 0 && fcntl(a->keep_fd, F_SETFD, 0) != 0) {
        f.err = errno;
        goto fail;
    }
    if (chdir(a->cwd) != 0) {
        f.stage = STAGE_CHDIR;
        f.err = errno;
        goto fail;
    }
    /* where the parent found it on PATH; anything else (gone since, now a
     * script without #!) searches as ever, with execvpe's own errors */
    if (a->exec_path)
        execve(a->exec_path, spec->command, a->envp);
    execvpe(spec->command[0], spec->command, a->envp);
    f.stage = STAGE_EXEC;
    f.err = errno;
fail:;
    ssize_t w = write(a->report_fd, &f, sizeof f);
    (void)w; /* nothing left to do if even this fails: the parent sees 127 */
    _exit(127);
}

/* vforks the child of a; the pid, or -1 with errno. This thread waits
 * until the child has exec'd or exited; the agent's other threads run on. */
static pid_t start_child(const struct child_args *a)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = vfork();
    if (pid == 0)
        child_run(a);
    /* the child shared this thread's errno: only a failed vfork's counts */
    int e = pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return pid;
}

/* The PATH its program is looked up in: the job's own when its env sets
 * one (a venv's python), else the agent's (NULL). A container's program is
 * the runtime, the agent's. */
static const char *program_path(const struct agent_task_spec *spec)
{
    for (size_t i = 0; !spec->image && i < spec->nenv; i++)
        if (!strncmp(spec->env[i], "PATH=", 5))
            return spec->env[i] + 5;
    return NULL;
}

/* Starts the child; on return t is running (and starting: its child
 * answers through t->start_fd) or exited with `start failed`. */
static int spawn(struct agent_task *t, const struct agent_task_spec *spec, const char *cwd,
                 char **envp, int keep_fd, int64_t now_ms)
{
    /* what a failure the child reports later will name */
    t->start_cwd = strdup(cwd);
    t->start_program = strdup(spec->command[0]);
    if (!t->start_cwd || !t->start_program)
        return TIDE_ENOMEM;
    t->start_in_workdir = spec->workdir != NULL;
    if (spec->run_as && spec->run_as->change)
        snprintf(t->start_user, sizeof t->start_user, "%s", spec->run_as->name);
    int log_fd = open(t->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    char logs_dir[PATH_MAX];
    const char *slash = strrchr(t->log_path, '/');
    /* the logs directory went away since it was last made */
    if (log_fd < 0 && errno == ENOENT && slash &&
        (size_t)snprintf(logs_dir, sizeof logs_dir, "%.*s", (int)(slash - t->log_path),
                         t->log_path) < sizeof logs_dir &&
        ensure_logs_dir(logs_dir, true) == 0)
        log_fd = open(t->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (log_fd < 0) {
        char why[256];
        snprintf(why, sizeof why, "cannot open log %s: %s", t->log_path, strerror(errno));
        fail_start(t, why);
        return 0;
    }
    /* the job's user may read its own log, nobody else's */
    if (spec->run_as && spec->run_as->change &&
        fchown(log_fd, spec->run_as->uid, spec->run_as->gid) != 0)
        log_warn("job %" PRId64 ": cannot hand its log to user %s: %s", t->job_id,
                 spec->run_as->name, strerror(errno));
    int null_fd = dev_null();
    int report[2] = {-1, -1};
    /* non-blocking: the loop reads it among other work; the child's one
     * write fits in the empty pipe */
    if (null_fd < 0 || pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0) {
        char why[128];
        snprintf(why, sizeof why, "%s", strerror(errno));
        close(log_fd);
        fail_start(t, why);
        return 0;
    }
    struct child_args args = {.spec = spec,
                              .cwd = cwd,
                              .envp = envp,
                              .exec_path = agent_exec_cache_find(&exec_cache, spec->command[0],
                                                                 program_path(spec), now_ms),
                              .sigs = agent_task_signals_caught(),
                              .log_fd = log_fd,
                              .null_fd = null_fd,
                              .report_fd = report[1],
                              .cgroup_fd = t->cgroup ? t->cgroup->procs_fd : -1,
                              .devices_fd = t->cgroup ? t->cgroup->devices_fd : -1,
                              .keep_fd = keep_fd,
                              .parent = agent_pid()};
    pid_t pid = start_child(&args);
    int fork_errno = errno;
    agent_cgroup_close_procs(t->cgroup);
    /* closed before anything else is forked, so only this child holds the
     * write end and its exec (or death) is the pipe's end */
    close(report[1]);
    close(log_fd);
    if (pid < 0) {
        close(report[0]);
        char why[128];
        snprintf(why, sizeof why, "fork: %s", strerror(fork_errno));
        fail_start(t, why);
        return 0;
    }
    /* the child made its group first thing, and vfork returns after its
     * exec; but where vfork is a plain fork (under valgrind, say) it may
     * not have yet: set here too, so a stop that comes before the child
     * runs still reaches the whole group. EACCES: the child has exec'd */
    if (setpgid(pid, pid) != 0 && errno != EACCES && errno != ESRCH)
        log_warn("job %" PRId64 ": setpgid: %s", t->job_id, strerror(errno));
    t->pid = pid;
    t->started_ms = now_ms;
    t->start_fd = report[0];
    if (t->guard)
        agent_task_guard_add(t->guard, pid, t->container_runtime,
                             t->container_runtime ? t->container_name : NULL);
    return 0;
}

/* The child failed before exec (f): reaps it and marks t exited with the
 * reason. */
static void child_failed(struct agent_task *t, const struct child_failure *f)
{
    int status;
    while (waitpid(t->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (t->guard)
        agent_task_guard_remove(t->guard, t->pid);
    char why[PATH_MAX + 128];
    if (f->stage == STAGE_CHDIR && t->start_in_workdir)
        snprintf(why, sizeof why,
                 "workdir %s: %s on this node (jobs run in the directory they were submitted "
                 "from, or --workdir)",
                 t->start_cwd, strerror(f->err));
    else if (f->stage == STAGE_CHDIR)
        snprintf(why, sizeof why, "job directory %s: %s", t->start_cwd, strerror(f->err));
    else if (f->stage == STAGE_EXEC)
        snprintf(why, sizeof why, "%s: %s", t->start_program, strerror(f->err));
    else if (f->stage == STAGE_USER)
        snprintf(why, sizeof why, "cannot run as user %s: %s", t->start_user, strerror(f->err));
    else if (f->stage == STAGE_CGROUP)
        snprintf(why, sizeof why, "cannot join cgroup %s: %s", t->cgroup ? t->cgroup->path : "?",
                 strerror(f->err));
    else
        snprintf(why, sizeof why, "%s", strerror(f->err));
    fail_start(t, why);
    t->has_exit_code = true;
    t->exit_code = 127;
    if (t->cgroup && agent_cgroup_remove(t->cgroup) != 0)
        log_warn("job %" PRId64 ": cannot remove cgroup %s yet", t->job_id, t->cgroup->path);
}

/* Reads the handshake; ended says the child is known to be gone, so an
 * empty pipe cannot be an answer still to come. True when answered. */
static bool read_handshake(struct agent_task *t, bool ended)
{
    if (t->start_fd < 0)
        return false;
    struct child_failure f;
    ssize_t r;
    do
        r = read(t->start_fd, &f, sizeof f);
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno == EAGAIN && !ended)
        return false; /* still between fork and exec */
    close(t->start_fd);
    t->start_fd = -1;
    /* an empty pipe closed by exec (or by a child that died before it
     * could write, whose wait status then tells) */
    if (r == (ssize_t)sizeof f)
        child_failed(t, &f);
    return true;
}

bool agent_task_starting(const struct agent_task *t)
{
    return t->start_fd >= 0;
}

int agent_task_start_fd(const struct agent_task *t)
{
    return t->start_fd;
}

bool agent_task_confirm(struct agent_task *t)
{
    return t->state == AGENT_TASK_RUNNING && read_handshake(t, false);
}

/* For a containerised task: the runtime's argv into *argv, or t failed to
 * start when its image is no registry reference or this node has no
 * runtime. */
static int container_command(struct agent_task *t, const struct agent_task_spec *spec,
                             const struct agent_task_site *site, const char *job_dir, char **vars,
                             size_t nvars, char ***argv, int *env_fd, struct tide_err *err)
{
    /* refused at submit; checked again for a job an older server stored or
     * a start made by hand: the runtime runs as the agent's user (root) */
    if (spec->image[0] == '-' || image_ref_has_transport(spec->image)) {
        char why[400];
        snprintf(why, sizeof why, "image %.128s: %s", spec->image,
                 spec->image[0] == '-' ? "must start with a letter or digit" : IMAGE_REF_EXPECTED);
        fail_start(t, why);
        return 0;
    }
    if (!site->container_runtime) {
        char why[400];
        snprintf(why, sizeof why,
                 "image %.255s: no container runtime on this node (install podman or docker, or "
                 "give --container-runtime)",
                 spec->image);
        fail_start(t, why);
        return 0;
    }
    char why[256];
    *env_fd = agent_task_env_file(spec->env, spec->nenv, vars, nvars, why, sizeof why);
    if (*env_fd == -1) {
        fail_start(t, why);
        return 0;
    }
    if (*env_fd < 0) {
        snprintf(why, sizeof why, "env file: %s", strerror(errno));
        fail_start(t, why);
        return 0;
    }
    t->container_runtime = site->container_runtime;
    agent_container_name(spec->job_id, spec->attempt, t->container_name,
                         sizeof t->container_name);
    char env_file[32];
    snprintf(env_file, sizeof env_file, "/dev/fd/%d", *env_fd);
    *argv = agent_container_task_argv(spec, site->container_runtime, t->container_name,
                                      site->work_dir, job_dir, env_file);
    if (!*argv)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    return 0;
}

int agent_task_start(const struct agent_task_spec *spec, const struct agent_task_site *site,
                     int64_t now_ms, struct agent_task **out, struct tide_err *err)
{
    *out = NULL;
    struct agent_task *t = calloc(1, sizeof *t);
    if (!t)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    t->job_id = spec->job_id;
    t->attempt = spec->attempt;
    t->state = AGENT_TASK_RUNNING;
    t->kill_grace_s = spec->kill_grace_s;
    t->guard = site->guard;
    t->started_ms = now_ms;
    t->gpu_memory_limit_mib = spec->gpu_memory_limit_mib;
    t->start_fd = -1;

    char *job_dir = path_join("%s/jobs/%" PRId64, site->work_dir, spec->job_id);
    char *logs_dir = path_join("%s/logs", site->work_dir);
    t->jobs_dir = path_join("%s/jobs", site->work_dir);
    t->log_path = path_join("%s/logs/%" PRId64 ".%" PRId64 ".log", site->work_dir, spec->job_id,
                            spec->attempt);
    if (site->fake_telemetry && job_dir)
        t->telemetry_file = path_join("%s/.fake_gpu", job_dir);
    if (spec->ngpus) {
        t->gpus = malloc(spec->ngpus * sizeof *t->gpus);
        if (t->gpus) {
            memcpy(t->gpus, spec->gpus, spec->ngpus * sizeof *t->gpus);
            t->ngpus = spec->ngpus;
        }
    }
    struct agent_task_spec run = {.command = spec->command};
    char *vars[16] = {0}; /* what tide_vars() sets, at most 13 */
    size_t nvars = 0;
    char **envp = NULL;
    int env_fd = -1; /* a container's env file (task_env_file.h) */
    int rc = 0;
    if (!job_dir || !logs_dir || !t->log_path || !t->jobs_dir ||
        (site->fake_telemetry && !t->telemetry_file) || (spec->ngpus && !t->gpus)) {
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        goto done;
    }
    int e = ensure_logs_dir(logs_dir, false);
    if (e != 0) {
        rc = tide_err_set(err, TIDE_EIO, NULL, "cannot create %s: %s", logs_dir, strerror(-e));
        goto done;
    }
    if (spec->invalid) {
        fail_start(t, spec->invalid);
        goto done;
    }
    bool job_dir_new = false;
    /* an earlier attempt's directory is kept as it is */
    e = dir_spares_make(site->job_dirs, job_dir, 0700, &job_dir_new);
    if (e == 0)
        e = give_dir(job_dir, spec->run_as, job_dir_new);
    if (e != 0) {
        char why[PATH_MAX + 64];
        snprintf(why, sizeof why, "cannot create %s: %s", job_dir, strerror(-e));
        fail_start(t, why);
        goto done;
    }
    /* the server's checkpoint directory, where it is on this machine (a
     * remote server's path is not here: nothing to do) */
    if (spec->checkpoint_dir && (e = give_dir(spec->checkpoint_dir, spec->run_as, false)) != 0 &&
        e != -ENOENT && e != -ENOTDIR)
        log_warn("job %" PRId64 ": cannot hand %s to its user: %s", t->job_id, spec->checkpoint_dir,
                 strerror(-e));
    /* an earlier attempt's telemetry must not show on this one's GPUs (a
     * directory made just now holds none) */
    if (t->telemetry_file && !job_dir_new && unlink(t->telemetry_file) != 0 && errno != ENOENT)
        log_warn("cannot remove %s: %s", t->telemetry_file, strerror(errno));
    if (site->cgroups && site->cgroups->ops) {
        /* a container's runtime gives it its GPUs' devices alone */
        struct agent_cgroup_limits lim = {.memory_mib = spec->memory_mib,
                                          .cpus = spec->cpus,
                                          .deny_minors = spec->image ? NULL : spec->deny_minors,
                                          .ndeny = spec->image ? 0 : spec->ndeny};
        struct tide_err cg_err;
        tide_err_clear(&cg_err);
        rc = agent_cgroup_create(site->cgroups, spec->job_id, spec->attempt, &lim, &t->cgroup,
                                 &cg_err);
        if (rc == TIDE_ENOMEM) {
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
            goto done;
        }
        rc = 0;
        if (!t->cgroup) {
            /* running it without the limit it asked for would be a lie */
            fail_start(t, cg_err.message);
            goto done;
        }
    }
    /* a container's runtime gets the agent's environment alone (the job's
     * variables go in its env file: task_env_file.h) */
    if (tide_vars(spec, site, job_dir, t->telemetry_file, t->cgroup, vars, &nvars) != 0 ||
        (spec->image ? agent_task_env_build(environ, NULL, 0, NULL, 0, &envp)
                     : agent_task_env_build(environ, spec->env, spec->nenv, vars, nvars, &envp)) !=
            0) {
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        goto done;
    }
    if (spec->max_runtime_s > 0)
        t->deadline_ms = now_ms + spec->max_runtime_s * 1000;
    /* what is exec'd: the command, or the runtime that runs it in its image */
    run = *spec;
    if (spec->image) {
        rc = container_command(t, spec, site, job_dir, vars, nvars, &run.command, &env_fd, err);
        if (rc || t->state == AGENT_TASK_EXITED)
            goto done;
        run.run_as = NULL; /* the runtime stays the agent's; --user switches inside */
    }
    /* a spare of the log's owner saves making a file (log_spares.h) */
    log_spares_take(t->log_path, log_owner(run.run_as));
    if (spawn(t, &run, spec->workdir && !spec->image ? spec->workdir : job_dir, envp, env_fd,
              now_ms) != 0)
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
done:
    if (env_fd >= 0)
        close(env_fd); /* the runtime has its own, or failed */
    if (run.command != spec->command)
        agent_container_argv_free(run.command);
    if (t->state == AGENT_TASK_EXITED && t->cgroup && agent_cgroup_remove(t->cgroup) != 0)
        log_warn("job %" PRId64 ": cannot remove cgroup %s yet", t->job_id, t->cgroup->path);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        free(vars[i]);
    agent_task_env_free(envp);
    free(job_dir);
    free(logs_dir);
    if (rc != 0) {
        agent_task_destroy(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* Records how the reaped leader ended. */
static void record_exit(struct agent_task *t, int status)
{
    t->state = AGENT_TASK_EXITED;
    if (WIFEXITED(status)) {
        t->has_exit_code = true;
        t->exit_code = WEXITSTATUS(status);
        snprintf(t->reason, sizeof t->reason, "exit %d", t->exit_code);
    } else if (WIFSIGNALED(status)) {
        t->has_signal = true;
        t->signal = WTERMSIG(status);
        snprintf(t->reason, sizeof t->reason, "signal %d", t->signal);
    } else {
        snprintf(t->reason, sizeof t->reason, "exit unknown");
    }
    /* a stop action or the deadline ended it, whatever its last words */
    if (t->stop_reason[0])
        snprintf(t->reason, sizeof t->reason, "%s", t->stop_reason);
}

/* Tells an OOM kill from other endings and removes the task's cgroup. */
static void finish_cgroup(struct agent_task *t)
{
    if (!t->cgroup)
        return;
    /* a stop's reason wins, as in record_exit; a task that still exited 0
     * lost only a helper process and did its work */
    bool ok = t->has_exit_code && t->exit_code == 0;
    if (!t->stop_reason[0] && !ok &&
        agent_cgroup_oom_killed(t->cgroup, t->has_signal ? t->signal : 0))
        snprintf(t->reason, sizeof t->reason, "oom");
    if (agent_cgroup_remove(t->cgroup) != 0)
        log_warn("job %" PRId64 ".%" PRId64 ": cannot remove cgroup %s yet", t->job_id, t->attempt,
                 t->cgroup->path);
}

bool agent_task_poll(struct agent_task *t, int64_t now_ms)
{
    return agent_task_poll_since(t, true, now_ms);
}

bool agent_task_poll_since(struct agent_task *t, bool maybe_exited, int64_t now_ms)
{
    if (t->state != AGENT_TASK_RUNNING)
        return false;
    if (!maybe_exited)
        goto deadlines;
    siginfo_t info;
    memset(&info, 0, sizeof info);
    /* WNOWAIT keeps the leader a zombie, so its pid cannot be reused as a
     * process group id before the group is killed below */
    if (waitid(P_PID, (id_t)t->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid) {
        /* a child that failed before exec wrote why before it exited */
        if (read_handshake(t, true) && t->state == AGENT_TASK_EXITED)
            return true;
        kill(-t->pid, SIGKILL);
        /* what escaped the group (its own session); a cgroup is emptied
         * whole by finish_cgroup below */
        int left = t->cgroup ? 0 : agent_leftovers_kill("/proc", t->jobs_dir, t->job_id);
        if (left)
            log_info("job %" PRId64 ".%" PRId64 ": killed %d process(es) left outside its group",
                     t->job_id, t->attempt, left);
        int status = 0;
        pid_t r;
        while ((r = waitpid(t->pid, &status, 0)) < 0 && errno == EINTR)
            ;
        if (t->guard)
            agent_task_guard_remove(t->guard, t->pid);
        record_exit(t, r == t->pid ? status : 0);
        finish_cgroup(t);
        /* a runtime killed before its container ended leaves it behind */
        if (t->container_runtime) {
            agent_container_remove(t->container_runtime, t->container_name);
            if (!t->stop_reason[0] && t->has_exit_code)
                agent_container_start_failure(t->container_runtime, t->exit_code, t->reason,
                                              sizeof t->reason);
        }
        return true;
    }
deadlines:
    if (t->deadline_ms && now_ms >= t->deadline_ms && !t->stopping)
        agent_task_stop(t, "max_runtime", t->kill_grace_s, SIGTERM, now_ms);
    if (t->stopping && t->kill_at_ms && now_ms >= t->kill_at_ms) {
        /* a SIGKILL is not forwarded: the runtime must deliver it */
        if (t->container_runtime)
            agent_container_signal(t->container_runtime, t->container_name, SIGKILL);
        kill(-t->pid, SIGKILL);
        t->kill_at_ms = 0; /* once is enough; the leader's exit reaps the rest */
    }
    return false;
}

void agent_task_stop(struct agent_task *t, const char *reason, int grace_s, int first_signal,
                     int64_t now_ms)
{
    if (t->state != AGENT_TASK_RUNNING)
        return;
    if (grace_s < 0)
        grace_s = 0;
    int64_t kill_at = now_ms + (int64_t)grace_s * 1000;
    if (!t->stopping) {
        t->stopping = true;
        snprintf(t->stop_reason, sizeof t->stop_reason, "%s", reason ? reason : "");
        kill(-t->pid, first_signal > 0 && first_signal < 65 ? first_signal : SIGTERM);
        t->kill_at_ms = kill_at > 0 ? kill_at : 1;
        return;
    }
    if (t->kill_at_ms && kill_at < t->kill_at_ms)
        t->kill_at_ms = kill_at > 0 ? kill_at : 1;
}

void agent_task_kill_now(struct agent_task *t)
{
    if (t->state == AGENT_TASK_RUNNING && t->pid > 0) {
        if (t->container_runtime)
            agent_container_signal(t->container_runtime, t->container_name, SIGKILL);
        kill(-t->pid, SIGKILL);
    }
}

bool agent_task_log_reusable(const struct agent_task *t)
{
    return t->state == AGENT_TASK_EXITED && t->cgroup && t->cgroup->removed &&
           !t->container_runtime;
}

void agent_task_destroy(struct agent_task *t)
{
    if (!t)
        return;
    agent_cgroup_destroy(t->cgroup);
    if (t->start_fd >= 0)
        close(t->start_fd);
    free(t->start_cwd);
    free(t->start_program);
    free(t->gpus);
    free(t->log_path);
    free(t->telemetry_file);
    free(t->jobs_dir);
    free(t);
}
