/* Job endpoints: submit, list (paged, read off the lock), show, cancel, logs
 * (with follow). */
#include <microhttpd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/sha256.h"
#include "core/job_spec.h"
#include "server/agent_wake.h"
#include "server/jobs_params.h"
#include "server/server.h"
#include "server/submit_batch.h"
#include "core/submit_limits.h"

/* "eta" of a pending job (docs/api.md): when it is expected to start and
 * what that rests on; start_time and in_s are null when there is none. */
static void add_eta(const struct job *job, json_t *job_json)
{
    json_t *eta = json_object();
    int64_t now = clock_now_ms();
    if (job->eta_start_ms > 0 && job->eta_basis != ETA_BASIS_UNKNOWN) {
        int64_t in_ms = job->eta_start_ms - now;
        json_object_set_new(eta, "start_time", json_real((double)job->eta_start_ms / 1000.0));
        json_object_set_new(eta, "in_s", json_integer(in_ms > 0 ? (in_ms + 999) / 1000 : 0));
    } else {
        json_object_set_new(eta, "start_time", json_null());
        json_object_set_new(eta, "in_s", json_null());
    }
    json_object_set_new(eta, "basis", json_string(eta_basis_name((enum eta_basis)job->eta_basis)));
    json_object_set_new(job_json, "eta", eta);
}

/* Adds what only the in-memory cluster knows: why a job waits, its
 * priority after escalation, its backfill reservation, its ETA. */
static void add_live_fields(struct server *srv, json_t *job_json)
{
    struct job *job = cluster_find_job(&srv->cluster, json_integer_value(json_object_get(job_json, "id")));
    if (job && job->nparts > 0) {
        json_t *nodes = json_array();
        struct node *first = cluster_find_node(&srv->cluster, job->node_id);
        json_array_append_new(nodes, json_string(first ? first->name : "?"));
        for (int i = 0; i < job->nparts; i++) {
            struct node *n = cluster_find_node(&srv->cluster, job->parts[i].node_id);
            json_array_append_new(nodes, json_string(n ? n->name : "?"));
        }
        json_object_set_new(job_json, "gang_nodes", nodes);
    }
    if (!job || job->state != JOB_PENDING)
        return;
    char why[TIDE_REASON_MAX];
    if (wait_reason_format(job, why, sizeof why)[0])
        json_object_set_new(job_json, "pending_reason", json_string(why));
    json_object_set_new(job_json, "effective_priority", json_integer(job->effective_priority));
    if (job->effective_priority > job->priority)
        json_object_set_new(job_json, "escalated", json_true());
    if (job->reserved_node_id) {
        struct node *node = cluster_find_node(&srv->cluster, job->reserved_node_id);
        /* start_time null: the jobs on its node give no runtime (backfill.h) */
        json_object_set_new(job_json, "reservation",
                            json_pack("{s:s, s:o}", "node", node ? node->name : "?", "start_time",
                                      job->reserved_start_ms
                                          ? json_real((double)job->reserved_start_ms / 1000.0)
                                          : json_null()));
    }
    if (job->preemptions)
        json_object_set_new(job_json, "preemptions", json_integer(job->preemptions));
    add_eta(job, job_json);
}

bool api_idempotency_key_valid(const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < n; i++)
        if (key[i] < 0x21 || key[i] > 0x7e)
            return false;
    return n >= 1 && n <= IDEMPOTENCY_KEY_MAX;
}

/* A project's user (tide.yaml) keeps its jobs' files from other projects'
 * jobs: only the admin token may have a job ask for another project's
 * user. 0, or an error naming "user". */
static int check_user_of_another_project(const struct server *srv, const struct api_request *req,
                                         json_t *spec, const char *project, struct tide_err *err)
{
    const char *user = json_string_value(json_object_get(spec, "user"));
    if (!user || req->token.kind == TOKEN_ADMIN)
        return 0;
    const char *other = NULL; /* a project it runs the jobs of */
    for (int i = 0; i < srv->cfg.nproject_users; i++) {
        if (strcmp(srv->cfg.project_users[i].user, user) != 0)
            continue;
        if (!strcmp(srv->cfg.project_users[i].project, project))
            return 0; /* this project's own (projects may share one) */
        if (!other)
            other = srv->cfg.project_users[i].project;
    }
    if (other)
        return tide_err_set(err, TIDE_EPERM, "user",
                            "user: '%s' runs the jobs of project '%s'; a job of project '%s' "
                            "may not ask for it",
                            user, other, project);
    return 0;
}

int api_jobs_check_spec(struct server *srv, const struct api_request *req, json_t *given,
                        json_t **spec, struct job *job, struct tide_err *err)
{
    *spec = NULL;
    int rc = job_spec_from_object(given, spec, job, err);
    if (!rc)
        rc = queue_admit(&srv->cfg.queues, given, *spec, job, err);
    if (!rc && !auth_project_allowed(req, job->project))
        rc = tide_err_set(err, TIDE_EPERM, "project",
                          "project: this token may not submit to project '%s'", job->project);
    if (!rc)
        rc = check_user_of_another_project(srv, req, *spec, job->project, err);
    if (rc) {
        json_decref(*spec);
        *spec = NULL;
    }
    return rc;
}

int api_jobs_submit(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    if (req->token.kind != TOKEN_ADMIN && req->token.kind != TOKEN_USER)
        return api_error_msg(reply, TIDE_EPERM, NULL, "this token cannot submit jobs");
    struct tide_err err;
    tide_err_clear(&err);
    json_t *spec = NULL;
    struct job job;
    json_error_t jerr;
    json_t *given = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!given)
        return api_error_msg(reply, TIDE_EINVAL, NULL, "invalid JSON at line %d column %d: %s",
                             jerr.line, jerr.column, jerr.text);
    struct submit_size size = {0, 0};
    submit_size_add(&size, given);
    int rc = submit_size_check(&size, "array", &err);
    if (!rc)
        rc = api_jobs_check_spec(srv, req, given, &spec, &job, &err);
    json_decref(given);
    if (rc)
        return api_error(reply, &err);
    struct submit_work w = {.req = req, .spec = spec, .job = job};
    w.idempotency_key = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Idempotency-Key");
    if (w.idempotency_key) {
        if (!api_idempotency_key_valid(w.idempotency_key)) {
            json_decref(spec);
            return api_error_msg(reply, TIDE_EINVAL, "Idempotency-Key",
                                 "Idempotency-Key: must be 1 to %d printable ASCII characters",
                                 IDEMPOTENCY_KEY_MAX);
        }
        sha256_hex(req->body, req->body_len, w.request_hash);
    }
    submit_batch_run(srv, &w);
    json_decref(spec);
    if (w.rc) {
        json_decref(w.out);
        free(w.out_text);
        return api_error(reply, &w.err);
    }
    reply->status = 201;
    if (w.out_text) { /* just inserted: written as text, no jansson values */
        reply->text = w.out_text;
        reply->content_type = "application/json";
    } else {
        reply->json = w.out; /* a replayed key: read back from the store */
    }
    return 0;
}

int api_jobs_list(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    /* a misspelt filter (stat=) listed every job */
    const char *unknown = api_query_unknown(req, jobs_params_names);
    if (unknown)
        return api_error_msg(reply, TIDE_EINVAL, unknown,
                             "%.64s: unknown parameter (known: state, queue, project, order, "
                             "limit, cursor)",
                             unknown);
    struct job_filter f = {.projects = req->token.kind == TOKEN_ADMIN ? NULL : req->token.projects};
    int limit;
    struct tide_err err;
    tide_err_clear(&err);
    if (jobs_params_parse(api_query_get, req, &f, &limit, &err) != 0)
        return api_error(reply, &err);
    f.limit = limit + 1; /* one more tells whether there is a next page */
    json_t *jobs = NULL;
    /* The rows come from the read-only connection without the lock, so a
     * long listing holds up neither the scheduler nor /healthz; only the
     * page's live fields (ETA, why it waits) are read under it. */
    if (store_jobs_list(srv->store, &f, &jobs, &err) != 0)
        return api_error(reply, &err);
    json_t *next = json_null();
    if (json_array_size(jobs) > (size_t)limit) {
        json_array_remove(jobs, (size_t)limit);
        json_t *last = json_array_get(jobs, (size_t)limit - 1);
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(last, "id")));
        next = json_string(id);
    }
    pthread_mutex_lock(&srv->lock);
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) add_live_fields(srv, j);
    pthread_mutex_unlock(&srv->lock);
    reply->json = json_pack("{s:o, s:o}", "jobs", jobs, "next", next);
    return 0;
}

/* Loads job id if the token may see it; otherwise fills a 404 reply (a job
 * of another project is answered as if it did not exist). Caller holds the lock. */
static json_t *visible_job(struct server *srv, struct api_request *req, int64_t id,
                           struct api_reply *reply)
{
    struct tide_err err;
    json_t *job = NULL;
    int rc = store_job_get(srv->store, id, &job, &err);
    if (!rc && !auth_project_allowed(req, json_string_value(json_object_get(job, "project")))) {
        json_decref(job);
        job = NULL;
        rc = tide_err_set(&err, TIDE_ENOENT, NULL, "job %lld not found", (long long)id);
    }
    if (rc)
        api_error(reply, &err);
    return job;
}

int api_jobs_get(struct server *srv, struct api_request *req, int64_t id, struct api_reply *reply)
{
    pthread_mutex_lock(&srv->lock);
    json_t *job = visible_job(srv, req, id, reply);
    if (job)
        add_live_fields(srv, job);
    pthread_mutex_unlock(&srv->lock);
    if (job)
        reply->json = job;
    return 0;
}

int api_jobs_cancel(struct server *srv, struct api_request *req, int64_t id, struct api_reply *reply)
{
    pthread_mutex_lock(&srv->lock);
    json_t *job = visible_job(srv, req, id, reply);
    if (!job) {
        pthread_mutex_unlock(&srv->lock);
        return 0;
    }
    json_decref(job);
    job = NULL;
    struct tide_err err;
    tide_err_clear(&err);
    int64_t now = clock_now_ms();
    struct action_list actions;
    action_list_init(&actions);
    int rc = sched_cancel(&srv->cluster, id, &actions);
    if (rc == TIDE_ENOENT) {
        rc = tide_err_set(&err, TIDE_ECONFLICT, NULL, "job %lld has already finished", (long long)id);
    } else if (rc == 1) {
        rc = apply_actions(srv, &actions, now, &err);
    } else {
        struct job_update u = {.job_id = id, .attempt = -1, .node_id = -1, .exit_code = -2,
                               .signal = -1, .cancel_requested = 1, .reason = "cancel requested"};
        struct job *cj = cluster_find_job(&srv->cluster, id);
        u.state = cj ? cj->state : JOB_RUNNING;
        rc = store_begin(srv->store, &err);
        if (!rc)
            rc = store_job_update(srv->store, &u, &err);
        if (!rc)
            rc = store_event_add(srv->store, now, "job_cancel_requested", id, 0,
                                 "cancel requested by user", &err);
        if (!rc)
            rc = store_commit(srv->store, &err);
        if (rc) {
            /* the client is told it failed: memory goes back to what the
             * store holds (a commit whose flush failed may stand there) */
            store_rollback(srv->store);
            server_resync_cluster(srv, now);
        }
    }
    if (!rc)
        agent_wake_job(srv, id); /* the stop reaches the agent now */
    if (!rc)
        rc = store_job_get(srv->store, id, &job, &err);
    pthread_mutex_unlock(&srv->lock);
    action_list_release(&actions);
    if (rc)
        return api_error(reply, &err);
    reply->json = job;
    return 0;
}

/* Streaming state of one logs request. */
struct log_stream {
    struct server *srv;
    struct MHD_Connection *conn; /* the follower's, to notice it hang up */
    int64_t job_id;
    int attempt;    /* attempt being read */
    int64_t offset; /* within that attempt */
    bool follow;
    char token_hash[65];   /* the request's: a follow ends when it stops passing */
    int64_t token_seen_ms; /* monotonic, when it last passed */
};

/* A follow outlives its request's check: a token revoked, rotated out or
 * expired meanwhile ends it within LOG_TOKEN_RECHECK_MS. */
#define LOG_TOKEN_RECHECK_MS 2000

static bool token_passes(struct log_stream *ls)
{
    int64_t now = clock_mono_ms();
    if (now - ls->token_seen_ms < LOG_TOKEN_RECHECK_MS)
        return true;
    if (!auth_still_passes(ls->srv, ls->token_hash))
        return false;
    ls->token_seen_ms = now;
    return true;
}

/* The job's latest attempt; *done when it has finished. */
static int latest_attempt(struct server *srv, int64_t job_id, bool *done)
{
    int attempt = 0;
    pthread_mutex_lock(&srv->lock);
    struct job *job = cluster_find_job(&srv->cluster, job_id);
    *done = job == NULL;
    if (job) {
        attempt = job->attempt;
    } else {
        json_t *row = NULL;
        struct tide_err err;
        if (store_job_get(srv->store, job_id, &row, &err) == 0)
            attempt = (int)json_integer_value(json_object_get(row, "attempt"));
        json_decref(row);
    }
    pthread_mutex_unlock(&srv->lock);
    return attempt;
}

/* Waits up to wait_ms for the client of conn to hang up. True when it has
 * (its socket says the peer closed or failed): nothing reads the stream
 * any more. */
static bool client_left(struct MHD_Connection *conn, int wait_ms)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info) {
        usleep((useconds_t)wait_ms * 1000);
        return false;
    }
    struct pollfd p = {.fd = info->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, wait_ms) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static ssize_t read_logs(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct log_stream *ls = cls;
    const char *dir = ls->srv->cfg.data_dir;
    for (;;) {
        if (!token_passes(ls))
            return MHD_CONTENT_READER_END_WITH_ERROR;
        int64_t n = log_store_read(dir, ls->job_id, ls->attempt, ls->offset, buf, max);
        if (n > 0) {
            ls->offset += n;
            return (ssize_t)n;
        }
        if (n < 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        bool done;
        int latest = latest_attempt(ls->srv, ls->job_id, &done);
        /* the stream tells of an attempt's end only once it is on disk, as
         * every answer does (http.c) */
        struct tide_err err;
        if ((ls->attempt < latest || done) && store_sync(ls->srv->store, &err) != 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (ls->attempt < latest) {
            ls->attempt++;
            ls->offset = 0;
            continue;
        }
        if (done || !ls->follow || ls->srv->stopping) {
            /* One more read catches output that arrived with the exit report. */
            n = log_store_read(dir, ls->job_id, ls->attempt, ls->offset, buf, max);
            if (n > 0) {
                ls->offset += n;
                return (ssize_t)n;
            }
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        /* A thread per connection: waiting here blocks only this request,
         * but until the job prints, so a follower that left ends it (its
         * thread and socket were held until then). */
        if (client_left(ls->conn, 200))
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

int api_jobs_logs(struct server *srv, struct api_request *req, int64_t id, struct api_reply *reply)
{
    pthread_mutex_lock(&srv->lock);
    json_t *job = visible_job(srv, req, id, reply);
    pthread_mutex_unlock(&srv->lock);
    if (!job)
        return 0;
    json_decref(job);
    const char *follow = api_query(req, "follow");
    bool on = follow && (!strcmp(follow, "1") || !strcmp(follow, "true"));
    if (follow && !on && strcmp(follow, "0") != 0 && strcmp(follow, "false") != 0)
        return api_error_msg(reply, TIDE_EINVAL, "follow",
                             "follow: must be 1 or 0 (true or false)");
    struct log_stream *ls = calloc(1, sizeof *ls);
    if (!ls)
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    *ls = (struct log_stream){.srv = srv,
                              .conn = req->conn,
                              .job_id = id,
                              .attempt = 1,
                              .follow = on,
                              .token_seen_ms = clock_mono_ms()};
    memcpy(ls->token_hash, req->token_hash, sizeof ls->token_hash);
    reply->response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, read_logs, ls, free);
    if (!reply->response) {
        free(ls);
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    }
    MHD_add_response_header(reply->response, "Content-Type", "text/plain; charset=utf-8");
    reply->status = 200;
    return 0;
}
