/* The agent's main loop (agent_loop.h). */
#include "agent/agent_loop.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "agent/agent_heartbeat.h"
#include "agent/agent_images.h"
#include "agent/agent_node.h"
#include "agent/agent_wake.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "core/reconcile.h"

/* How often tasks are reaped and deadlines checked: short, so exits are
 * reported and SIGKILLs sent close to on time. */
#define LOOP_TICK_MS 50
/* How often every task is asked whether it exited though no SIGCHLD came
 * (none is missed; this only bounds what a lost one would cost). */
#define REAP_ALL_MS 1000
/* Quickest follow-up heartbeat after a change (a task exited or was
 * started: the server hears of it at once), and with logs left over. */
#define HEARTBEAT_MIN_GAP_MS 2
#define HEARTBEAT_LOGS_GAP_MS 100
#define DEFAULT_HEARTBEAT_MS 1000
/* How long a heartbeat waits for tasks still between fork and exec, so it
 * reports them running only once they run (or failed, with the reason).
 * Children normally answer within milliseconds, side by side; one stuck
 * before exec (a hung workdir) is reported running after this. */
#define START_HOLD_MS 100
#define REGISTER_BACKOFF_MAX_MS 30000
#define FINAL_HEARTBEAT_TRIES 3

struct loop_state {
    int64_t last_reap_ms;     /* when every task's deadlines were last checked */
    int64_t last_reap_all_ms; /* when every task was last asked whether it exited */
    int64_t next_heartbeat_ms;
    int64_t last_heartbeat_ms;
    int64_t next_register_ms;
    int register_failures;
    bool ever_registered;
    bool killed_all; /* a second signal killed every task */
    struct agent_wake *wake; /* the long-poll that says "heartbeat now"; NULL: none */
};

static void choose_interval(struct agent *a)
{
    if (a->opts->heartbeat_ms > 0)
        a->heartbeat_ms = a->opts->heartbeat_ms;
    else if (a->node.heartbeat_ms > 0)
        a->heartbeat_ms = a->node.heartbeat_ms;
    else
        a->heartbeat_ms = DEFAULT_HEARTBEAT_MS;
}

/* Returns false when the failure is final (a first registration refused,
 * but for a live node of that name, which may be this agent's own). */
static bool try_register(struct agent *a, struct loop_state *s, int64_t now)
{
    struct tide_err err;
    tide_err_clear(&err);
    int rc = agent_node_register(a, &err);
    if (rc == 0) {
        a->registered = true;
        s->ever_registered = true;
        /* the server may have lost what it held (a new database); sending
         * from 0 costs one refused chunk and its reply gives the real offset */
        for (size_t i = 0; i < a->ntasks; i++)
            a->tasks[i]->log_acked = 0;
        s->register_failures = 0;
        choose_interval(a);
        agent_wake_set(s->wake, a->node.node_token, a->heartbeat_ms);
        agent_note_server(a, true, NULL, now);
        log_info("registered as node %" PRId64 " (%s) with %zu GPU(s), heartbeat every %d ms",
                 a->node.node_id, a->opts->name, a->gpus.count, a->heartbeat_ms);
        s->next_heartbeat_ms = now;
        return true;
    }
    if (rc != TIDE_EIO && rc != TIDE_EBUSY && !s->ever_registered) {
        log_error("%s", err.message);
        return false;
    }
    int64_t backoff = 1000LL << (s->register_failures < 5 ? s->register_failures : 5);
    if (backoff > REGISTER_BACKOFF_MAX_MS)
        backoff = REGISTER_BACKOFF_MAX_MS;
    s->register_failures++;
    s->next_register_ms = now + backoff;
    agent_note_server(a, false, err.message, now);
    return true;
}

static void heartbeat(struct agent *a, struct loop_state *s, int64_t now)
{
    bool changed = false, more = false;
    struct tide_err err;
    tide_err_clear(&err);
    int rc = agent_heartbeat_send(a, now, &changed, &more, &err);
    s->last_heartbeat_ms = now;
    s->next_heartbeat_ms = now + a->heartbeat_ms;
    if (rc == 0) {
        a->last_contact_ms = now; /* sent then: the server heard from us no earlier */
        agent_note_server(a, true, NULL, now);
        if (changed)
            s->next_heartbeat_ms = now + HEARTBEAT_MIN_GAP_MS;
        else if (more)
            s->next_heartbeat_ms = now + HEARTBEAT_LOGS_GAP_MS;
    } else if (rc == TIDE_EAUTH) {
        log_warn("the server refused the node token; registering again");
        a->registered = false;
        agent_wake_set(s->wake, NULL, 0);
        s->next_register_ms = now;
    } else {
        agent_note_server(a, false, err.message, now);
    }
}

/* Kills a share's task that uses more GPU memory than it was given. */
static void enforce_gpu_memory(struct agent *a, struct agent_task *t, int64_t now)
{
    if (t->state != AGENT_TASK_RUNNING || t->stopping || t->gpu_memory_limit_mib <= 0 ||
        !a->gpus.ops || !a->gpus.ops->task_memory_mib)
        return;
    struct gpu_claim claim = {t->gpus, t->ngpus, t->telemetry_file, NULL, /* read now */
                              t->jobs_dir, t->job_id};
    int64_t used = 0;
    if (a->gpus.ops->task_memory_mib(&a->gpus, &claim, t->pid, &used) != 0 || used <= t->gpu_memory_limit_mib)
        return;
    log_warn("job %" PRId64 ".%" PRId64 ": uses %" PRId64 " MiB of GPU memory, its share is %" PRId64
             " MiB: killing it",
             t->job_id, t->attempt, used, t->gpu_memory_limit_mib);
    agent_task_stop(t, "gpu memory over limit", 0, SIGKILL, now);
}

/* Kills a task whose log grew past --max-log-mib, looked at once a second. */
static void enforce_log_cap(struct agent *a, struct agent_task *t, int64_t now)
{
    if (t->state != AGENT_TASK_RUNNING || t->stopping || a->opts->max_log_mib <= 0 ||
        now - t->log_size_checked_ms < 1000)
        return;
    t->log_size_checked_ms = now;
    struct stat st;
    if (stat(t->log_path, &st) != 0 || st.st_size <= a->opts->max_log_mib * 1024 * 1024)
        return;
    char why[64];
    snprintf(why, sizeof why, "log over %" PRId64 " MiB", a->opts->max_log_mib);
    log_warn("job %" PRId64 ".%" PRId64 ": %s (--max-log-mib): killing it", t->job_id,
             t->attempt, why);
    agent_task_stop(t, why, 0, SIGKILL, now);
}

static struct agent_task *task_of_pid(const struct agent *a, pid_t pid)
{
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i]->pid == pid && a->tasks[i]->state == AGENT_TASK_RUNNING)
            return a->tasks[i];
    return NULL;
}

/* Asks the kernel which children have exited (WNOWAIT: each stays a zombie
 * for its owner to reap) and reaps those that are tasks, one waitid each
 * rather than one per task. False when a child that is no task's (an image
 * listing, the probe) is among them: the caller then asks of every task. */
static bool reap_exited(struct agent *a, int64_t now, bool *changed)
{
    for (size_t n = 0; n <= a->ntasks; n++) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0)
            return errno == ECHILD; /* no child at all */
        if (!info.si_pid)
            return true;
        struct agent_task *t = task_of_pid(a, info.si_pid);
        if (!t || !agent_task_poll_since(t, true, now))
            return false;
        log_info("job %" PRId64 ".%" PRId64 ": %s", t->job_id, t->attempt, t->reason);
        *changed = true;
    }
    return false;
}

/* Reaps every task that may have exited (maybe_exited: a child has, or it
 * is time to ask anyway) and checks every task's deadlines; true when one
 * exited. */
static bool reap(struct agent *a, bool maybe_exited, int64_t now)
{
    bool changed = false;
    if (maybe_exited && reap_exited(a, now, &changed))
        maybe_exited = false;
    for (size_t i = 0; i < a->ntasks; i++) {
        struct agent_task *t = a->tasks[i];
        enforce_gpu_memory(a, t, now);
        enforce_log_cap(a, t, now);
        if (agent_task_poll_since(t, maybe_exited, now)) {
            log_info("job %" PRId64 ".%" PRId64 ": %s", t->job_id, t->attempt, t->reason);
            changed = true;
        }
    }
    return changed;
}

/* Reads the start handshakes of tasks between fork and exec (task.h); true
 * when one was answered. */
static bool confirm_starts(struct agent *a)
{
    bool changed = false;
    for (size_t i = 0; i < a->ntasks; i++) {
        struct agent_task *t = a->tasks[i];
        if (!agent_task_starting(t) || !agent_task_confirm(t))
            continue;
        if (t->state == AGENT_TASK_EXITED)
            log_warn("job %" PRId64 ".%" PRId64 ": %s", t->job_id, t->attempt, t->reason);
        changed = true;
    }
    return changed;
}

/* The handshakes still open: their descriptors into fds, their number
 * returned. *since_ms is when the loop first saw some open (now, when
 * none were), 0 once none are. */
static size_t open_starts(const struct agent *a, int *fds, int64_t now, int64_t *since_ms)
{
    size_t n = 0;
    for (size_t i = 0; i < a->ntasks; i++)
        if (agent_task_starting(a->tasks[i]))
            fds[n++] = agent_task_start_fd(a->tasks[i]);
    if (!n)
        *since_ms = 0;
    else if (!*since_ms)
        *since_ms = now;
    return n;
}

/* Fencing: once the server has not heard from this node for its node
 * timeout, it has declared the node lost and requeued the tasks elsewhere;
 * running them on would run each job twice, so they stop a little before
 * (agent_fence_at_ms). Checked at every turn of the loop, so an agent that
 * was frozen (SIGSTOP) stops its tasks as it wakes. */
static bool fence_if_cut_off(struct agent *a, int64_t now)
{
    int64_t fence_at = agent_fence_at_ms(a);
    if (!fence_at || now < fence_at)
        return false;
    char reason[96];
    snprintf(reason, sizeof reason, "fenced: no contact with the server for %" PRId64 " s",
             (now - a->last_contact_ms) / 1000);
    bool stopped = false;
    for (size_t i = 0; i < a->ntasks; i++) {
        struct agent_task *t = a->tasks[i];
        if (t->state != AGENT_TASK_RUNNING || t->fenced)
            continue;
        log_warn("job %" PRId64 ".%" PRId64 ": %s; killing it", t->job_id, t->attempt, reason);
        agent_task_stop(t, reason, 0, SIGKILL, now);
        t->fenced = true;
        stopped = true;
    }
    return stopped;
}

/* Acts on the starts and stops a wait answer carried (agent_wake.h), as a
 * heartbeat reply's: at once, rather than after the heartbeat the wake
 * asks for (which follows and reports them). Not when the answer was for
 * another registration, nor once cut off from the server (fencing), nor
 * when a heartbeat reply applied meanwhile was derived after it (its
 * "decision" is lower: agent_heartbeat_apply_actions). */
static bool take_wait_answer(struct agent *a, struct loop_state *s, int64_t now)
{
    char token[sizeof s->wake->answer_token];
    char *answer = agent_wake_take(s->wake, token, sizeof token);
    if (!answer)
        return false;
    bool changed = false;
    int64_t fence_at = agent_fence_at_ms(a);
    bool cut_off = fence_at && now >= fence_at;
    if (a->registered && !a->shutting_down && !cut_off && a->node.node_token &&
        !strcmp(token, a->node.node_token) &&
        agent_heartbeat_apply_actions(a, answer, now, &changed) == TIDE_ECONFLICT)
        log_warn("wait: answered by a deposed leader; ignored");
    free(answer);
    return changed;
}

/* The health probe; a new result goes to the server soon. */
static bool probe(struct agent *a, int64_t now)
{
    if (!a->opts->health_command)
        return false;
    char path[4200];
    snprintf(path, sizeof path, "%s/health-probe.out", a->work_dir);
    return agent_probe_tick(&a->probe, a->opts->health_command, a->opts->health_interval_s,
                            a->opts->health_timeout_s, path, now);
}

/* The first signal: no task starts from now on, every task is stopped
 * with its grace, and the next heartbeat (at once) says the agent is
 * stopping, so the server gives the node no new work. The loop goes on
 * (heartbeats, reaping, fencing) until the last task has exited. */
static void begin_shutdown(struct agent *a, struct loop_state *s, int64_t now)
{
    a->shutting_down = true;
    size_t n = agent_running_tasks(a);
    log_info("signal received, shutting down%s", n ? "" : ": no task runs");
    if (n)
        log_info("stopping %zu task(s)", n);
    /* the job did not end of itself, whatever its exit status (a job
     * that checkpoints on SIGTERM exits 0): the server requeues it */
    for (size_t i = 0; i < a->ntasks; i++)
        agent_task_stop(a->tasks[i], AGENT_STOPPED_REASON, a->tasks[i]->kill_grace_s, SIGTERM,
                        now);
    s->next_heartbeat_ms = now;
}

/* True once the agent may exit: it was signalled and no task runs. A
 * second signal kills every task at once. */
static bool shutdown_done(struct agent *a, struct loop_state *s,
                          volatile sig_atomic_t *signals, int64_t now)
{
    if (!*signals)
        return false;
    if (!a->shutting_down)
        begin_shutdown(a, s, now);
    if (*signals > 1 && !s->killed_all) {
        log_warn("second signal: killing every task now");
        for (size_t i = 0; i < a->ntasks; i++)
            agent_task_kill_now(a->tasks[i]);
        s->killed_all = true;
    }
    return agent_running_tasks(a) == 0;
}

static void final_heartbeat(struct agent *a)
{
    if (!a->registered)
        return;
    for (int i = 0; i < FINAL_HEARTBEAT_TRIES; i++) {
        bool changed, more;
        struct tide_err err;
        tide_err_clear(&err);
        int rc = agent_heartbeat_send(a, clock_mono_ms(), &changed, &more, &err);
        if (rc != 0) {
            log_warn("last heartbeat: %s", err.message);
            return;
        }
        if (!more)
            return; /* otherwise send the rest of the logs */
    }
}

int agent_loop_run(struct agent *a, volatile sig_atomic_t *signals)
{
    struct loop_state s = {0};
    s.wake = agent_wake_start(&a->servers); /* without it: polling only */
    struct tide_err err;
    tide_err_clear(&err);
    if (agent_node_load(a, &err) == 0) {
        a->registered = true;
        s.ever_registered = true;
        choose_interval(a);
        agent_wake_set(s.wake, a->node.node_token, a->heartbeat_ms);
        log_info("node %" PRId64 " (%s) from node.json, heartbeat every %d ms", a->node.node_id,
                 a->opts->name, a->heartbeat_ms);
    } else {
        a->heartbeat_ms = a->opts->heartbeat_ms > 0 ? a->opts->heartbeat_ms : DEFAULT_HEARTBEAT_MS;
    }
    int64_t now = clock_mono_ms();
    s.next_heartbeat_ms = now;
    s.next_register_ms = now;
    static int start_fds[AGENT_MAX_TASKS + 1]; /* handshakes still open, the image listing */
    int64_t starting_since_ms = 0;
    for (;;) {
        now = clock_mono_ms();
        if (shutdown_done(a, &s, signals, now))
            break;
        bool changed = fence_if_cut_off(a, now);
        changed |= confirm_starts(a);
        /* the loop turns far more often than tasks end (every start
         * handshake, wake and heartbeat): the tasks are polled when a child
         * has exited, and on the tick for deadlines and stops. With SIGCHLD
         * watched, the tick asks the kernel only every REAP_ALL_MS, in case. */
        bool exited = agent_wake_child_exited();
        if (exited || now - s.last_reap_ms >= LOOP_TICK_MS) {
            bool all = exited || !agent_wake_watches_children() ||
                       now - s.last_reap_all_ms >= REAP_ALL_MS;
            s.last_reap_ms = now;
            if (all)
                s.last_reap_all_ms = now;
            changed |= reap(a, all, now);
        }
        changed |= probe(a, now);
        changed |= agent_images_poll(a, now); /* a new image list goes out at once */
        /* The tasks of one reply start side by side and are reported
         * together, once each runs or has failed with its reason. */
        bool hold = open_starts(a, start_fds, now, &starting_since_ms) &&
                    now - starting_since_ms < START_HOLD_MS;
        if (!hold) /* directories kept long enough go to the trash */
            job_dir_sweep_retire_due(a->job_dir_sweep, agent_job_has_task, a);
        /* A node with a health probe registers once the first one is in,
         * so it never takes work before its health is known. */
        bool probe_first = a->opts->health_command && !a->probe.has_result;
        if (!a->registered && !a->shutting_down && !probe_first && now >= s.next_register_ms &&
            !try_register(a, &s, now)) {
            agent_wake_stop(s.wake);
            return 1;
        }
        if (a->registered && !hold &&
            (now >= s.next_heartbeat_ms ||
             (changed && now - s.last_heartbeat_ms >= HEARTBEAT_MIN_GAP_MS)))
            heartbeat(a, &s, clock_mono_ms());
        if (changed && s.next_heartbeat_ms > now + HEARTBEAT_MIN_GAP_MS)
            s.next_heartbeat_ms = now + HEARTBEAT_MIN_GAP_MS;
        now = clock_mono_ms();
        int64_t wait = s.next_heartbeat_ms - now;
        if (!a->registered)
            wait = probe_first ? LOOP_TICK_MS : s.next_register_ms - now;
        /* the heartbeat may have started tasks: wait for their answers
         * (or the end of the hold) rather than for the heartbeat's time */
        size_t starting = open_starts(a, start_fds, now, &starting_since_ms);
        if (starting && a->registered && now - starting_since_ms < START_HOLD_MS)
            wait = START_HOLD_MS - (now - starting_since_ms);
        size_t nfds = starting;
        if (agent_images_fd(a) >= 0)
            start_fds[nfds++] = agent_images_fd(a);
        if (agent_wake_wait(s.wake, wait < LOOP_TICK_MS ? wait : LOOP_TICK_MS, start_fds, nfds) &&
            a->registered) {
            /* the server has something for us: do what its answer carried
             * now, and heartbeat (once those tasks run) for the rest */
            take_wait_answer(a, &s, clock_mono_ms());
            s.next_heartbeat_ms = clock_mono_ms();
        }
    }
    /* before the exit frees what the long poll uses (agent_wake.h) */
    agent_wake_stop(s.wake);
    final_heartbeat(a);
    return 0;
}
