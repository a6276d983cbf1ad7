/*
 * Fuzz target: the agent's side of the agent protocol, a heartbeat reply
 * (agent_heartbeat_apply_reply and, through it, agent_actions_apply) on an
 * agent with four fake GPUs. Starting and stopping processes is replaced
 * (the link wraps agent_task_start and agent_task_stop, see CMakeLists.txt)
 * by a check of what the parsed start action holds, so no input can run
 * anything.
 */
#include <stdio.h>
#include <stdlib.h>

#include "agent/agent.h"
#include "agent/agent_heartbeat.h"
#include "agent/agent_opts.h"
#include "agent/task.h"
#include "fuzz.h"

int __wrap_agent_task_start(const struct agent_task_spec *spec, const struct agent_task_site *site,
                            int64_t now_ms, struct agent_task **out, struct tide_err *err);
void __wrap_agent_task_stop(struct agent_task *t, const char *reason, int grace_s,
                            int first_signal, int64_t now_ms);

/* Reads every string and index the parsed spec points to (ASan checks
 * them), then refuses, as a start that cannot even be reported would. */
int __wrap_agent_task_start(const struct agent_task_spec *spec, const struct agent_task_site *site,
                            int64_t now_ms, struct agent_task **out, struct tide_err *err)
{
    (void)site;
    (void)now_ms;
    *out = NULL;
    size_t total = 0;
    for (char **c = spec->command; c && *c; c++)
        total += strlen(*c);
    for (size_t i = 0; i < spec->nenv; i++)
        total += strlen(spec->env[i]);
    for (size_t i = 0; i < spec->ngpus; i++)
        total += (size_t)spec->gpus[i] + strlen(spec->gpu_uuids[i]);
    if (spec->workdir)
        total += strlen(spec->workdir);
    if (spec->checkpoint_dir)
        total += strlen(spec->checkpoint_dir);
    if (spec->invalid)
        total += strlen(spec->invalid);
    if (!spec->invalid && (!spec->command || !spec->command[0] || !spec->command[0][0]))
        abort(); /* a start taken as valid has a command */
    return tide_err_set(err, TIDE_EIO, NULL, "fuzz: not started (%zu bytes)", total);
}

void __wrap_agent_task_stop(struct agent_task *t, const char *reason, int grace_s,
                            int first_signal, int64_t now_ms)
{
    (void)t, (void)reason, (void)grace_s, (void)first_signal, (void)now_ms;
    abort(); /* there are no tasks to stop */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct agent_opts opts = {.kill_grace_s = 10};
    static struct agent a;
    static bool ready;
    if (!ready) {
        struct tide_err err;
        a.opts = &opts;
        a.work_dir = "/nonexistent/tide-fuzz";
        if (gpu_backend_open(&a.gpus, &gpu_fake_ops, "2xH200:141GB,2xT4:16GB", "fuzz", &err) != 0) {
            fprintf(stderr, "fuzz: fake GPUs: %s\n", err.message);
            abort();
        }
        ready = true;
    }
    char *body = fuzz_strndup(data, size);
    if (!body)
        return 0;
    bool changed = false;
    agent_heartbeat_apply_reply(&a, body, 1000, &changed);
    if (a.ntasks != 0 || changed)
        abort(); /* nothing could start */
    free(body);
    return 0;
}
