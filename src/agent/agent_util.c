/* Small helpers on struct agent shared by its parts (agent.h). */
#include "agent/agent.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/http_client.h"
#include "common/log.h"

/* While the server stays away, say so this often. */
#define AGENT_DOWN_WARN_MS 30000

bool agent_work_ran_tasks(const char *work_dir)
{
    char jobs[PATH_MAX];
    int w = snprintf(jobs, sizeof jobs, "%s/jobs", work_dir);
    if (w < 0 || (size_t)w >= sizeof jobs)
        return true;
    DIR *d = opendir(jobs);
    if (!d)
        return errno != ENOENT;
    bool any = false;
    struct dirent *e;
    while (!any && (e = readdir(d)) != NULL)
        any = strncmp(e->d_name, ".spare-", 7) && strcmp(e->d_name, ".") &&
              strcmp(e->d_name, ".."); /* spares are made ahead (dir_spares.h) */
    closedir(d);
    return any;
}

int64_t agent_fence_at_ms(const struct agent *a)
{
    int64_t timeout = a->node.node_timeout_ms;
    if (!timeout || !a->last_contact_ms)
        return 0;
    /* A tenth, but never less than a heartbeat's shortest wait, a loop
     * tick and the kill (short timeouts), nor more than half of it. */
    int64_t margin = timeout / 10 > AGENT_FENCE_MARGIN_MIN_MS ? timeout / 10 : AGENT_FENCE_MARGIN_MIN_MS;
    if (margin > timeout / 2)
        margin = timeout / 2;
    return a->last_contact_ms + timeout - margin;
}

size_t agent_running_tasks(const struct agent *a)
{
    size_t n = 0;
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i]->state == AGENT_TASK_RUNNING)
            n++;
    return n;
}

bool agent_job_has_task(int64_t job_id, void *agent)
{
    const struct agent *a = agent;
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i]->job_id == job_id)
            return true;
    return false;
}

struct agent_task *agent_find_task(struct agent *a, int64_t job_id, int64_t attempt)
{
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i]->job_id == job_id && a->tasks[i]->attempt == attempt)
            return a->tasks[i];
    return NULL;
}

bool agent_was_forgotten(const struct agent *a, int64_t job_id, int64_t attempt)
{
    size_t n = a->nforgotten < AGENT_FORGOTTEN_MAX ? a->nforgotten : AGENT_FORGOTTEN_MAX;
    for (size_t i = 0; i < n; i++)
        if (a->forgotten[i].job_id == job_id && a->forgotten[i].attempt == attempt)
            return true;
    return false;
}

void agent_drop_task(struct agent *a, size_t i)
{
    size_t slot = a->nforgotten++ % AGENT_FORGOTTEN_MAX;
    a->forgotten[slot].job_id = a->tasks[i]->job_id;
    a->forgotten[slot].attempt = a->tasks[i]->attempt;
    job_dir_sweep_touch(a->job_dir_sweep, a->tasks[i]->job_id); /* kept from now */
    agent_task_destroy(a->tasks[i]);
    memmove(&a->tasks[i], &a->tasks[i + 1], (a->ntasks - i - 1) * sizeof a->tasks[0]);
    a->ntasks--;
}

void agent_note_server(struct agent *a, bool ok, const char *what, int64_t now_ms)
{
    if (ok) {
        char url[512];
        if (a->server_down)
            log_info("server %s reachable again after %lld s",
                     agent_servers_current(&a->servers, url, sizeof url),
                     (long long)((now_ms - a->down_since_ms) / 1000));
        a->server_down = false;
        return;
    }
    if (!a->server_down) {
        a->server_down = true;
        a->down_since_ms = now_ms;
        a->down_warn_ms = now_ms;
        log_warn("%s; tasks keep running, retrying", what);
    } else if (now_ms - a->down_warn_ms >= AGENT_DOWN_WARN_MS) {
        a->down_warn_ms = now_ms;
        log_warn("%s (for %lld s now); still retrying", what,
                 (long long)((now_ms - a->down_since_ms) / 1000));
    }
}

const char *agent_server_message(const struct http_response *resp, char *buf, size_t n)
{
    snprintf(buf, n, "HTTP %ld", resp->status);
    json_t *root = resp->body ? json_loads(resp->body, 0, NULL) : NULL;
    const char *msg = NULL;
    if (root && json_unpack(root, "{s:{s:s}}", "error", "message", &msg) == 0 && msg)
        snprintf(buf, n, "HTTP %ld: %s", resp->status, msg);
    else if ((msg = json_string_value(json_object_get(root, "error")))) /* "not the leader" */
        snprintf(buf, n, "HTTP %ld: %s", resp->status, msg);
    json_decref(root);
    return buf;
}
