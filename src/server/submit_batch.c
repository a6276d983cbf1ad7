/* Group commit of job submissions (see submit_batch.h). */
#include "server/submit_batch.h"

#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/json_write.h"
#include "common/log.h"
#include "common/sha256.h"
#include "core/feasible.h"
#include "core/job_spec.h"
#include "store/store_events.h"
#include "store/store_idempotency.h"

struct submit_batch {
    pthread_mutex_t mu;          /* guards the queue, committing and each work's done flag */
    struct submit_work *head, *tail;
    bool committing;             /* a waiter is committing a batch (lead_batch) */
    long long batches, jobs;     /* for the log at stop */
};

/* Every job depended on must exist and be visible to the submitter. Caller holds the lock. */
static int check_dependencies(struct server *srv, const struct api_request *req,
                              const struct job *job, struct tide_err *err)
{
    for (int d = 0; d < job->ndeps; d++) {
        enum job_state state;
        char project[TIDE_NAME_MAX];
        int rc = store_job_state(srv->store, job->depends_on[d], &state, project, err);
        if (rc == TIDE_ENOENT || (!rc && !auth_project_allowed(req, project)))
            return tide_err_set(err, TIDE_EINVAL, "depends_on", "depends_on: job %lld does not exist",
                                (long long)job->depends_on[d]);
        if (rc)
            return rc;
    }
    return 0;
}

/* Member i of an array job: its own name and TIDE_ARRAY_INDEX (new
 * reference, NULL when out of memory). A shallow copy: what members share
 * (command, mounts, ...) is never changed once checked, so only the top
 * level and env are their own. */
static json_t *array_member_spec(json_t *spec, int i)
{
    json_t *member = json_copy(spec);
    json_t *given_env = json_object_get(spec, "env");
    json_t *env = given_env ? json_copy(given_env) : json_object();
    char name[JOB_SPEC_MAX_NAME + 16], index[16];
    snprintf(name, sizeof name, "%.*s[%d]", JOB_SPEC_MAX_NAME - 8,
             json_string_value(json_object_get(spec, "name")), i);
    snprintf(index, sizeof index, "%d", i);
    if (!member || !env || json_object_del(member, "array") != 0 ||
        json_object_set_new(member, "name", json_string(name)) != 0 ||
        json_object_set_new(env, "TIDE_ARRAY_INDEX", json_string(index)) != 0 ||
        json_object_set(member, "env", env) != 0) {
        json_decref(env);
        json_decref(member);
        return NULL;
    }
    json_decref(env);
    return member;
}

static int work_count(const struct submit_work *w)
{
    int count = (int)json_integer_value(json_object_get(w->spec, "array"));
    return count < 1 ? 1 : count;
}

/* A key used before (in the store, or earlier in this batch): w becomes a
 * replay of what it made. The same key with another request is refused. */
static int check_idempotency(struct server *srv, struct submit_work *list, struct submit_work *w,
                             int64_t now)
{
    const char *owner = w->req->token.name;
    char hash[65] = "";
    struct submit_work *e = list;
    for (; e != w; e = e->next)
        if (e->idempotency_key && !e->rc && !strcmp(e->idempotency_key, w->idempotency_key) &&
            !strcmp(e->req->token.name, owner))
            break;
    if (e != w) {
        snprintf(hash, sizeof hash, "%s", e->request_hash);
        if (e->replay_ids)
            w->replay_ids = json_incref(e->replay_ids);
        else
            w->replay_of = e->replay_of ? e->replay_of : e;
    } else {
        int rc = store_idempotency_get(srv->store, owner, w->idempotency_key, now, hash,
                                       &w->replay_ids, &w->err);
        if (rc == TIDE_ENOENT)
            return 0;
        if (rc)
            return rc;
    }
    if (!ct_str_equal(hash, w->request_hash)) {
        json_decref(w->replay_ids);
        w->replay_ids = NULL;
        w->replay_of = NULL;
        return tide_err_set(&w->err, TIDE_ECONFLICT, "Idempotency-Key",
                            "Idempotency-Key: '%s' was used for a different request",
                            w->idempotency_key);
    }
    return 0;
}

/* The checks that read state: an idempotency key, whether the job could
 * ever run, dependencies and a budget that refuses. */
static void check_work(struct server *srv, struct submit_work *list, struct submit_work *w,
                       int64_t now)
{
    if (w->idempotency_key) {
        w->rc = check_idempotency(srv, list, w, now);
        if (w->rc || w->replay_ids || w->replay_of)
            return;
    }
    /* A job no node or pool could ever hold is refused now, not left to
     * wait forever (feasible.h). Here, under the lock the batch holds
     * anyway, rather than in the HTTP thread, which then needs no lock. */
    w->rc = feasible_check(&srv->cluster, srv->cfg.pools, srv->cfg.npools, &w->job, &w->err);
    if (!w->rc)
        w->rc = check_dependencies(srv, w->req, &w->job, &w->err);
    char why[TIDE_REASON_MAX];
    if (!w->rc && budget_rejects_submit(&srv->cfg.budgets, w->job.project, why))
        w->rc = tide_err_set(&w->err, TIDE_EPERM, "project",
                             "project: %s; its budget refuses new jobs until the period ends", why);
}

/* The row just inserted for job as GET /v1/jobs/{id} reads it back
 * (store_job_get's columns, in its order), written straight as the
 * answer's text: no second trip to the store, and no jansson values built
 * and then dumped (json_write.h). */
static void inserted_job_text(struct json_buf *b, const struct job *job, json_t *spec,
                              const char *owner, int64_t now)
{
    const char *name = json_string_value(json_object_get(spec, "name"));
    json_buf_text(b, "{\"id\":");
    json_buf_integer(b, job->id);
    json_buf_text(b, ",\"name\":");
    if (name)
        json_buf_string(b, name);
    else
        b->failed = true;
    json_buf_text(b, ",\"project\":");
    json_buf_string(b, job->project);
    json_buf_text(b, ",\"queue\":");
    json_buf_string(b, job->queue);
    json_buf_text(b, ",\"priority\":");
    json_buf_integer(b, job->priority);
    json_buf_text(b, ",\"state\":\"pending\",\"reason\":\"submitted\",\"attempt\":0,\"spec\":");
    json_buf_value(b, spec);
    json_buf_text(b, ",\"node\":null,\"gpus\":[],\"exit_code\":null,\"signal\":null,"
                     "\"submit_time\":");
    json_buf_real(b, (double)now / 1000.0);
    json_buf_text(b, ",\"start_time\":null,\"end_time\":null,\"cancel_requested\":false,"
                     "\"owner\":");
    json_buf_string(b, owner);
    json_buf_text(b, ",\"held\":false}");
}

/* Inserts w's rows in the open transaction; fills ids (count of them) and,
 * unless ids_only, w->rows with the answer's text: the job as stored, or
 * {"jobs": [...]} for an array. */
static int insert_work(struct server *srv, struct submit_work *w, int64_t *ids, int count,
                       int64_t now, struct tide_err *err)
{
    int rc = 0;
    const char *owner = w->req->token.name;
    bool rows = !w->ids_only;
    if (rows)
        json_buf_text(&w->rows, count > 1 ? "{\"jobs\":[" : "");
    for (int i = 0; !rc && i < count; i++) {
        json_t *member = count > 1 ? array_member_spec(w->spec, i) : json_incref(w->spec);
        struct job copy = w->job;
        rc = member ? store_job_insert(srv->store, &copy, member, owner, now, err)
                    : tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        if (!rc) /* the project given: no lookup of the row just inserted */
            rc = store_event_add_in(srv->store, now, "job_submitted", copy.id, 0, NULL,
                                    copy.project,
                                    count > 1 ? "submitted as part of an array" : "submitted",
                                    err);
        if (!rc && rows) {
            json_buf_text(&w->rows, i ? "," : "");
            inserted_job_text(&w->rows, &copy, member, owner, now);
        }
        json_decref(member);
        ids[i] = copy.id;
    }
    if (rows)
        json_buf_text(&w->rows, count > 1 ? "]}\n" : "\n");
    if (!rc && w->rows.failed)
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    if (!rc && w->idempotency_key)
        rc = store_idempotency_put(srv->store, w->req->token.name, w->idempotency_key,
                                   w->request_hash, ids, count, now, err);
    return rc;
}

static void answer(struct server *srv, struct submit_work *w, const int64_t *ids, int count);

/* After the commit: into the cluster (unless *reloaded: a reload already
 * brought the whole batch in from the store), and the answer. */
static void finish_work(struct server *srv, struct submit_work *w, const int64_t *ids, int count,
                        int64_t now, bool *reloaded)
{
    for (int i = 0; i < count && !*reloaded; i++) {
        struct job copy = w->job;
        copy.id = ids[i];
        copy.submit_ms = now;
        snprintf(copy.user, sizeof copy.user, "%s", w->req->token.name); /* the row's owner */
        copy.state = JOB_PENDING;
        if (!cluster_add_job(&srv->cluster, &copy)) {
            /* Durable but not cached: the reload brings it in. */
            struct tide_err ignored;
            server_reload_cluster(srv, now, &ignored);
            *reloaded = true;
        }
    }
    srv->jobs_submitted += count;
    answer(srv, w, ids, count);
}

/* w's answer: its job as stored, or {"jobs": [...]} for an array; as
 * text from w->rows when it was just inserted, else read from the store. */
static void answer(struct server *srv, struct submit_work *w, const int64_t *ids, int count)
{
    if (w->rows.data && !w->ids_only) {
        w->out_text = json_buf_finish(&w->rows, NULL);
        if (!w->out_text)
            w->rc = tide_err_set(&w->err, TIDE_ENOMEM, NULL, "out of memory");
        return;
    }
    if (w->ids_only) {
        w->out = json_pack("{s:I}", "id", (json_int_t)(count > 0 ? ids[0] : 0));
        if (w->out && count > 1) {
            json_t *all = json_array();
            for (int i = 0; i < count; i++)
                json_array_append_new(all, json_integer(ids[i]));
            json_object_set_new(w->out, "ids", all);
        }
        if (!w->out)
            w->rc = tide_err_set(&w->err, TIDE_ENOMEM, NULL, "out of memory");
        return;
    }
    if (count == 1) {
        w->rc = store_job_get(srv->store, ids[0], &w->out, &w->err);
        return;
    }
    json_t *jobs = json_array();
    bool contiguous = count > 0; /* an array's members, inserted in one go */
    for (int i = 1; i < count && contiguous; i++)
        contiguous = ids[i] == ids[i - 1] + 1;
    if (contiguous && jobs)
        w->rc = store_jobs_get_range(srv->store, ids[0], ids[count - 1], jobs, &w->err);
    for (int i = 0; !contiguous && !w->rc && i < count; i++) {
        json_t *one = NULL;
        w->rc = store_job_get(srv->store, ids[i], &one, &w->err);
        if (!w->rc)
            json_array_append_new(jobs, one);
    }
    w->out = json_pack("{s:o}", "jobs", jobs);
}

/* A replayed key answers with the jobs it made, as they are now. */
static void answer_replay(struct server *srv, struct submit_work *w)
{
    if (w->replay_of) {
        if (w->replay_of->rc) {
            w->rc = w->replay_of->rc;
            w->err = w->replay_of->err;
            return;
        }
        answer(srv, w, w->replay_of->ids, w->replay_of->nids);
        return;
    }
    int count = (int)json_array_size(w->replay_ids);
    int64_t *ids = calloc(count > 0 ? (size_t)count : 1, sizeof *ids);
    if (!ids) {
        w->rc = tide_err_set(&w->err, TIDE_ENOMEM, NULL, "out of memory");
        return;
    }
    for (int i = 0; i < count; i++)
        ids[i] = json_integer_value(json_array_get(w->replay_ids, (size_t)i));
    answer(srv, w, ids, count);
    free(ids);
}

/* Under the lock: the works of list in one transaction. Refused works fail
 * alone; a failed write or commit fails all the others (nothing of the
 * batch is stored). */
static bool is_replay(const struct submit_work *w)
{
    return w->replay_ids || w->replay_of;
}

static void commit_batch(struct server *srv, struct submit_work *list)
{
    int64_t now = clock_now_ms();
    size_t inserts = 0, replays = 0;
    for (struct submit_work *w = list; w; w = w->next) {
        check_work(srv, list, w, now);
        if (!w->rc && is_replay(w))
            replays++;
        else if (!w->rc)
            inserts++;
    }
    struct tide_err err;
    tide_err_clear(&err);
    int rc = inserts ? store_begin(srv->store, &err) : 0;
    for (struct submit_work *w = list; inserts && !rc && w; w = w->next) {
        if (w->rc || is_replay(w))
            continue;
        w->nids = work_count(w);
        w->ids = calloc((size_t)w->nids, sizeof *w->ids);
        rc = w->ids ? insert_work(srv, w, w->ids, w->nids, now, &err)
                    : tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
    }
    if (inserts && !rc)
        rc = store_commit(srv->store, &err);
    else if (inserts)
        store_rollback(srv->store);
    bool reloaded = false;
    for (struct submit_work *w = list; w; w = w->next) {
        if (w->rc || is_replay(w))
            continue;
        if (rc) {
            w->rc = rc;
            w->err = err;
        } else {
            finish_work(srv, w, w->ids, w->nids, now, &reloaded);
        }
    }
    for (struct submit_work *w = list; replays && w; w = w->next)
        if (!w->rc && is_replay(w))
            answer_replay(srv, w);
    for (struct submit_work *w = list; w; w = w->next) {
        free(w->ids);
        w->ids = NULL;
        json_decref(w->replay_ids);
        w->replay_ids = NULL;
        json_buf_release(&w->rows);
    }
    if (inserts && !rc)
        sched_loop_kick_submitted(srv);
}

/* Under sb->mu, with nobody committing: the calling waiter commits every
 * work queued (its own among them) in one transaction, answers their
 * waiters, and hands the next batch, if one queued meanwhile, to that
 * batch's first waiter. */
static void lead_batch(struct server *srv, struct submit_batch *sb)
{
    struct submit_work *list = sb->head;
    sb->head = sb->tail = NULL;
    sb->committing = true;
    pthread_mutex_unlock(&sb->mu);
    pthread_mutex_lock(&srv->lock);
    commit_batch(srv, list);
    pthread_mutex_unlock(&srv->lock);
    pthread_mutex_lock(&sb->mu);
    sb->batches++;
    for (struct submit_work *w = list, *next; w; w = next) {
        next = w->next; /* w belongs to its waiter once done (and mu is let go) */
        sb->jobs++;
        w->done = true;
        pthread_cond_signal(w->wake);
    }
    sb->committing = false;
    if (sb->head)
        pthread_cond_signal(sb->head->wake);
}

int submit_batch_start(struct server *srv, struct tide_err *err)
{
    struct submit_batch *sb = calloc(1, sizeof *sb);
    if (!sb)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    pthread_mutex_init(&sb->mu, NULL);
    srv->submits = sb;
    return 0;
}

void submit_batch_stop(struct server *srv)
{
    struct submit_batch *sb = srv->submits;
    if (!sb)
        return;
    if (sb->batches)
        log_info("%lld submissions in %lld commits", sb->jobs, sb->batches);
    srv->submits = NULL;
    pthread_mutex_destroy(&sb->mu);
    free(sb);
}

static void work_reset(struct submit_work *w)
{
    w->rc = 0;
    tide_err_clear(&w->err);
    w->out = NULL;
    w->out_text = NULL;
    w->replay_ids = NULL;
    w->replay_of = NULL;
    w->ids = NULL;
    w->nids = 0;
    w->rows = (struct json_buf){0};
    w->next = NULL;
    w->done = false;
}

/* Queues first..last (linked) in one go, so that one transaction takes them
 * all, and waits until they are answered: leading a batch whenever nobody
 * is committing, else sleeping until its own works are done or it is
 * handed the next batch. */
static void queue_and_wait(struct submit_batch *sb, struct server *srv, struct submit_work *first,
                           struct submit_work *last)
{
    pthread_cond_t wake;
    pthread_cond_init(&wake, NULL);
    for (struct submit_work *w = first;; w = w->next) {
        w->wake = &wake;
        if (w == last)
            break;
    }
    pthread_mutex_lock(&sb->mu);
    if (sb->tail)
        sb->tail->next = first;
    else
        sb->head = first;
    sb->tail = last;
    while (!last->done) {
        if (!sb->committing)
            lead_batch(srv, sb);
        else
            pthread_cond_wait(&wake, &sb->mu);
    }
    pthread_mutex_unlock(&sb->mu);
    pthread_cond_destroy(&wake);
}

void submit_batch_run_many(struct server *srv, struct submit_work **works, size_t n)
{
    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++) {
        work_reset(works[i]);
        if (i > 0)
            works[i - 1]->next = works[i];
    }
    struct submit_batch *sb = srv->submits;
    if (!sb) {
        pthread_mutex_lock(&srv->lock);
        commit_batch(srv, works[0]);
        pthread_mutex_unlock(&srv->lock);
        return;
    }
    queue_and_wait(sb, srv, works[0], works[n - 1]);
}

void submit_batch_run(struct server *srv, struct submit_work *w)
{
    submit_batch_run_many(srv, &w, 1);
}
