/* Group commit of job submissions (see submit_batch.h). */
#include "server/submit_batch.h"

#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "core/job_spec.h"

struct submit_batch {
    pthread_t thread;
    pthread_mutex_t mu;          /* guards the queue and each work's done flag */
    pthread_cond_t queued;       /* work arrived, or stop */
    pthread_cond_t answered;     /* a batch is done */
    struct submit_work *head, *tail;
    bool stop;
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

/* Member i of an array job: its own name and TIDE_ARRAY_INDEX (new reference). */
static json_t *array_member_spec(json_t *spec, int i)
{
    json_t *member = json_deep_copy(spec);
    if (!member)
        return NULL;
    json_object_del(member, "array");
    char name[JOB_SPEC_MAX_NAME + 16], index[16];
    snprintf(name, sizeof name, "%.*s[%d]", JOB_SPEC_MAX_NAME - 8,
             json_string_value(json_object_get(spec, "name")), i);
    snprintf(index, sizeof index, "%d", i);
    json_object_set_new(member, "name", json_string(name));
    json_t *env = json_object_get(member, "env");
    if (!env) {
        env = json_object();
        json_object_set_new(member, "env", env);
    }
    json_object_set_new(env, "TIDE_ARRAY_INDEX", json_string(index));
    return member;
}

static int work_count(const struct submit_work *w)
{
    int count = (int)json_integer_value(json_object_get(w->spec, "array"));
    return count < 1 ? 1 : count;
}

/* The checks that read state: dependencies and a budget that refuses. */
static void check_work(struct server *srv, struct submit_work *w)
{
    w->rc = check_dependencies(srv, w->req, &w->job, &w->err);
    char why[TIDE_REASON_MAX];
    if (!w->rc && budget_rejects_submit(&srv->cfg.budgets, w->job.project, why))
        w->rc = tide_err_set(&w->err, TIDE_EPERM, "project",
                             "project: %s; its budget refuses new jobs until the period ends", why);
}

/* Inserts w's rows in the open transaction; fills ids (count of them). */
static int insert_work(struct server *srv, struct submit_work *w, int64_t *ids, int count,
                       int64_t now, struct tide_err *err)
{
    int rc = 0;
    for (int i = 0; !rc && i < count; i++) {
        json_t *member = count > 1 ? array_member_spec(w->spec, i) : json_incref(w->spec);
        struct job copy = w->job;
        rc = member ? store_job_insert(srv->store, &copy, member, w->req->token.name, now, err)
                    : tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        json_decref(member);
        if (!rc)
            rc = store_event_add(srv->store, now, "job_submitted", copy.id, 0,
                                 count > 1 ? "submitted as part of an array" : "submitted", err);
        ids[i] = copy.id;
    }
    return rc;
}

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
    if (count == 1) {
        w->rc = store_job_get(srv->store, ids[0], &w->out, &w->err);
        return;
    }
    json_t *jobs = json_array();
    for (int i = 0; !w->rc && i < count; i++) {
        json_t *one = NULL;
        w->rc = store_job_get(srv->store, ids[i], &one, &w->err);
        if (!w->rc)
            json_array_append_new(jobs, one);
    }
    w->out = json_pack("{s:o}", "jobs", jobs);
}

/* Under the lock: the works of list in one transaction. Refused works fail
 * alone; a failed write or commit fails all the others (nothing of the
 * batch is stored). */
static void commit_batch(struct server *srv, struct submit_work *list)
{
    int64_t now = clock_now_ms();
    size_t n = 0;
    for (struct submit_work *w = list; w; w = w->next) {
        check_work(srv, w);
        if (!w->rc)
            n++;
    }
    if (!n)
        return;
    int64_t **ids = calloc(n, sizeof *ids);
    struct tide_err err;
    tide_err_clear(&err);
    int rc = ids ? store_begin(srv->store, &err) : tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
    size_t k = 0;
    for (struct submit_work *w = list; !rc && w; w = w->next) {
        if (w->rc)
            continue;
        int count = work_count(w);
        ids[k] = calloc((size_t)count, sizeof **ids);
        rc = ids[k] ? insert_work(srv, w, ids[k], count, now, &err)
                    : tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
        k++;
    }
    if (!rc)
        rc = store_commit(srv->store, &err);
    else if (ids)
        store_rollback(srv->store);
    k = 0;
    bool reloaded = false;
    for (struct submit_work *w = list; w; w = w->next) {
        if (w->rc)
            continue;
        if (rc) {
            w->rc = rc;
            w->err = err;
        } else {
            finish_work(srv, w, ids[k], work_count(w), now, &reloaded);
        }
        if (ids)
            free(ids[k]);
        k++;
    }
    free(ids);
    if (!rc)
        sched_loop_kick(srv);
}

static void *committer(void *arg)
{
    struct server *srv = arg;
    struct submit_batch *sb = srv->submits;
    pthread_mutex_lock(&sb->mu);
    for (;;) {
        while (!sb->head && !sb->stop)
            pthread_cond_wait(&sb->queued, &sb->mu);
        if (!sb->head)
            break; /* stopping, nothing left */
        struct submit_work *list = sb->head;
        sb->head = sb->tail = NULL;
        pthread_mutex_unlock(&sb->mu);
        pthread_mutex_lock(&srv->lock);
        commit_batch(srv, list);
        pthread_mutex_unlock(&srv->lock);
        pthread_mutex_lock(&sb->mu);
        sb->batches++;
        for (struct submit_work *w = list, *next; w; w = next) {
            next = w->next; /* w belongs to its waiter once done */
            sb->jobs++;
            w->done = true;
        }
        pthread_cond_broadcast(&sb->answered);
    }
    pthread_mutex_unlock(&sb->mu);
    return NULL;
}

int submit_batch_start(struct server *srv, struct tide_err *err)
{
    struct submit_batch *sb = calloc(1, sizeof *sb);
    if (!sb)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    pthread_mutex_init(&sb->mu, NULL);
    pthread_cond_init(&sb->queued, NULL);
    pthread_cond_init(&sb->answered, NULL);
    srv->submits = sb;
    if (pthread_create(&sb->thread, NULL, committer, srv) != 0) {
        srv->submits = NULL;
        pthread_mutex_destroy(&sb->mu);
        pthread_cond_destroy(&sb->queued);
        pthread_cond_destroy(&sb->answered);
        free(sb);
        return tide_err_set(err, TIDE_EIO, NULL, "cannot start the submit thread");
    }
    return 0;
}

void submit_batch_stop(struct server *srv)
{
    struct submit_batch *sb = srv->submits;
    if (!sb)
        return;
    pthread_mutex_lock(&sb->mu);
    sb->stop = true;
    pthread_cond_signal(&sb->queued);
    pthread_mutex_unlock(&sb->mu);
    pthread_join(sb->thread, NULL);
    if (sb->batches)
        log_info("%lld submissions in %lld commits", sb->jobs, sb->batches);
    srv->submits = NULL;
    pthread_mutex_destroy(&sb->mu);
    pthread_cond_destroy(&sb->queued);
    pthread_cond_destroy(&sb->answered);
    free(sb);
}

void submit_batch_run(struct server *srv, struct submit_work *w)
{
    struct submit_batch *sb = srv->submits;
    w->rc = 0;
    tide_err_clear(&w->err);
    w->out = NULL;
    w->next = NULL;
    w->done = false;
    if (!sb) {
        pthread_mutex_lock(&srv->lock);
        commit_batch(srv, w);
        pthread_mutex_unlock(&srv->lock);
        return;
    }
    pthread_mutex_lock(&sb->mu);
    if (sb->tail)
        sb->tail->next = w;
    else
        sb->head = w;
    sb->tail = w;
    pthread_cond_signal(&sb->queued);
    while (!w->done)
        pthread_cond_wait(&sb->answered, &sb->mu);
    pthread_mutex_unlock(&sb->mu);
}
