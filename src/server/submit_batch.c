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

/* An array member's spec: its own name and TIDE_ARRAY_INDEX (new
 * reference, NULL when out of memory). A shallow copy: what members share
 * (command, mounts, ...) is never changed once checked, so only the top
 * level and env are their own. */
static json_t *member_with(json_t *spec, const char *name, const char *index)
{
    json_t *member = json_copy(spec);
    json_t *given_env = json_object_get(spec, "env");
    json_t *env = given_env ? json_copy(given_env) : json_object();
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

/* The array's name as its members begin theirs: cut (on a UTF-8
 * boundary) to leave room for [i]. Its length in bytes. */
static int member_prefix(json_t *spec, const char **prefix)
{
    json_t *name = json_object_get(spec, "name");
    *prefix = json_string_value(name);
    return (int)job_spec_cut_utf8(*prefix, json_string_length(name), JOB_SPEC_MAX_NAME - 8);
}

/* Member i's name: the array's, cut to leave room, then [i]. */
#define MEMBER_NAME_SIZE (JOB_SPEC_MAX_NAME + 16)
static void member_name(json_t *spec, int i, char name[MEMBER_NAME_SIZE])
{
    const char *prefix;
    int len = member_prefix(spec, &prefix);
    snprintf(name, MEMBER_NAME_SIZE, "%.*s[%d]", len, prefix, i);
}

/* Member i of an array job (see member_with). */
static json_t *array_member_spec(json_t *spec, int i)
{
    char name[MEMBER_NAME_SIZE], index[16];
    member_name(spec, i, name);
    snprintf(index, sizeof index, "%d", i);
    return member_with(spec, name, index);
}

/* Stand-ins for a member's name and index in the array's one dumped spec. */
#define NAME_MARK "\"@@tide-array-name@@\""
#define INDEX_MARK "\"@@tide-array-index@@\""

/* text with its stand-ins for name (JSON-escaped, no quotes) and index i
 * filled in (malloc'd; NULL when out of memory). */
static char *fill_member(const char *text, const char *name_at, const char *index_at,
                         const char *name, size_t name_len, int i)
{
    char value[2][64];
    int vlen[2];
    vlen[0] = snprintf(value[0], sizeof value[0], "[%d]\"", i);
    vlen[1] = snprintf(value[1], sizeof value[1], "\"%d\"", i);
    size_t len = strlen(text), nm = strlen(NAME_MARK), im = strlen(INDEX_MARK);
    char *out = malloc(len + name_len + 2 + (size_t)vlen[0] + (size_t)vlen[1]);
    if (!out)
        return NULL;
    const char *at[2] = {name_at, index_at};
    size_t skip[2] = {nm, im};
    int first = name_at < index_at ? 0 : 1;
    size_t o = 0;
    const char *from = text;
    for (int k = 0; k < 2; k++) {
        int m = k == 0 ? first : 1 - first;
        memcpy(out + o, from, (size_t)(at[m] - from));
        o += (size_t)(at[m] - from);
        if (m == 0) {
            out[o++] = '"';
            memcpy(out + o, name, name_len);
            o += name_len;
        }
        memcpy(out + o, value[m], (size_t)vlen[m]);
        o += (size_t)vlen[m];
        from = at[m] + skip[m];
    }
    size_t rest = strlen(from);
    memcpy(out + o, from, rest + 1);
    return out;
}

/* The spec texts of an array's count members, as json_write_compact of each
 * array_member_spec writes them, made from one dump of the array's spec
 * with stand-ins: a copy and a few numbers a member, not a JSON tree and
 * a dump. (When a stand-in shows up in the spec itself, each member is
 * dumped.) Fills texts[count] and names (count * MEMBER_NAME_SIZE). */
static int member_texts(json_t *spec, int count, char **texts, char *names)
{
    json_t *tpl = member_with(spec, "@@tide-array-name@@", "@@tide-array-index@@");
    char *text = tpl ? json_write_compact(tpl, false, NULL) : NULL;
    json_decref(tpl);
    const char *prefix;
    int prefix_len = member_prefix(spec, &prefix);
    json_t *pj = json_stringn(prefix, (size_t)prefix_len);
    char *quoted = pj ? json_dumps(pj, JSON_ENCODE_ANY) : NULL;
    json_decref(pj);
    const char *name_at = text ? strstr(text, NAME_MARK) : NULL;
    const char *index_at = text ? strstr(text, INDEX_MARK) : NULL;
    bool once = name_at && index_at && !strstr(name_at + 1, NAME_MARK) &&
                !strstr(index_at + 1, INDEX_MARK) && quoted;
    int rc = 0;
    for (int i = 0; !rc && i < count; i++) {
        char *name = names + (size_t)i * MEMBER_NAME_SIZE;
        member_name(spec, i, name);
        if (once) {
            texts[i] = fill_member(text, name_at, index_at, quoted + 1, strlen(quoted) - 2, i);
        } else {
            json_t *member = array_member_spec(spec, i);
            texts[i] = member ? json_write_compact(member, false, NULL) : NULL;
            json_decref(member);
        }
        if (!texts[i])
            rc = -1;
    }
    free(text);
    free(quoted);
    return rc;
}

static int work_count(const struct submit_work *w)
{
    int count = (int)json_integer_value(json_object_get(w->spec, "array"));
    return count < 1 ? 1 : count;
}

/* The batch's keyed works by (owner, key): the first of each that was
 * not refused, so a keyed batch of n specs is n lookups, not n * n / 2
 * comparisons. Open addressing, at most half full. */
struct key_index {
    struct submit_work **slots;
    size_t cap;
};

static size_t key_slot(const struct key_index *idx, const struct submit_work *w)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over owner, NUL, key */
    for (const char *p = w->req->token.name;; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        if (!*p)
            break;
    }
    for (const char *p = w->idempotency_key; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return (size_t)h & (idx->cap - 1);
}

static bool same_key(const struct submit_work *a, const struct submit_work *b)
{
    return !strcmp(a->idempotency_key, b->idempotency_key) &&
           !strcmp(a->req->token.name, b->req->token.name);
}

/* The indexed work with w's owner and key, or NULL. */
static struct submit_work *key_find(const struct key_index *idx, const struct submit_work *w)
{
    for (size_t i = key_slot(idx, w);; i = (i + 1) & (idx->cap - 1)) {
        struct submit_work *e = idx->slots[i];
        if (!e || same_key(e, w))
            return e;
    }
}

/* Indexes w unless a work with its key is there already. */
static void key_add(struct key_index *idx, struct submit_work *w)
{
    size_t i = key_slot(idx, w);
    while (idx->slots[i] && !same_key(idx->slots[i], w))
        i = (i + 1) & (idx->cap - 1);
    if (!idx->slots[i])
        idx->slots[i] = w;
}

/* An index with room for n keyed works (slots NULL when out of memory). */
static void key_index_init(struct key_index *idx, size_t n)
{
    idx->cap = 16;
    while (idx->cap < 2 * n)
        idx->cap *= 2;
    idx->slots = calloc(idx->cap, sizeof *idx->slots);
}

/* A key used before (in the store, or earlier in this batch: idx, or a
 * walk of list when idx could not be made): w becomes a replay of what it
 * made. The same key with another request is refused. */
static int check_idempotency(struct server *srv, struct submit_work *list,
                             const struct key_index *idx, struct submit_work *w, int64_t now)
{
    const char *owner = w->req->token.name;
    char hash[65] = "";
    struct submit_work *e = list;
    if (idx->slots) {
        e = key_find(idx, w);
        if (!e)
            e = w;
    } else {
        for (; e != w; e = e->next)
            if (e->idempotency_key && !e->rc && same_key(e, w))
                break;
    }
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
static void check_work(struct server *srv, struct submit_work *list, const struct key_index *idx,
                       struct submit_work *w, int64_t now)
{
    if (w->rc) /* refused before it was queued (prepare_work) */
        return;
    if (w->idempotency_key) {
        w->rc = check_idempotency(srv, list, idx, w, now);
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
 * answer's text from the name and spec text the row was given: no second
 * trip to the store, and no spec built or dumped again. */
static void inserted_job_text(struct json_buf *b, const struct job *job, const char *name,
                              const char *spec_text, const char *owner, int64_t now)
{
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
    if (spec_text)
        json_buf_text(b, spec_text);
    else
        b->failed = true;
    json_buf_text(b, ",\"node\":null,\"gpus\":[],\"exit_code\":null,\"signal\":null,"
                     "\"submit_time\":");
    json_buf_real(b, (double)now / 1000.0);
    json_buf_text(b, ",\"start_time\":null,\"end_time\":null,\"cancel_requested\":false,"
                     "\"owner\":");
    json_buf_string(b, owner);
    json_buf_text(b, ",\"held\":false}");
}

static bool is_replay(const struct submit_work *w)
{
    return w->replay_ids || w->replay_of;
}

/* After w's rows are in (ids filled): unless ids_only, w->rows with the
 * answer's text, the job as stored or {"jobs": [...]} for an array, from
 * its rows (names) and the spec texts they were inserted with; and w's
 * idempotency key, in the open transaction. */
static int record_work(struct server *srv, struct submit_work *w, const struct store_new_job *rows,
                       int64_t now, struct tide_err *err)
{
    int rc = 0;
    const char *owner = w->req->token.name;
    if (!w->ids_only) {
        json_buf_text(&w->rows, w->nids > 1 ? "{\"jobs\":[" : "");
        for (int i = 0; i < w->nids; i++) {
            struct job copy = w->job;
            copy.id = w->ids[i];
            json_buf_text(&w->rows, i ? "," : "");
            inserted_job_text(&w->rows, &copy, rows[i].name, w->texts[i], owner, now);
        }
        json_buf_text(&w->rows, w->nids > 1 ? "]}\n" : "\n");
    }
    if (w->rows.failed)
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    if (!rc && w->idempotency_key)
        rc = store_idempotency_put(srv->store, owner, w->idempotency_key, w->request_hash,
                                   w->ids, w->nids, now, err);
    return rc;
}

/* Inserts the rows of list's works that are not refused or replays (n
 * rows in all) in the open transaction, their jobs and their events each
 * in a few multi-row statements, from the texts prepare_work made; fills
 * each work's ids. */
static int insert_all(struct server *srv, struct submit_work *list, size_t n, int64_t now,
                      struct tide_err *err)
{
    struct store_new_job *rows = calloc(n ? n : 1, sizeof *rows);
    struct store_new_event *events = calloc(n ? n : 1, sizeof *events);
    int rc = rows && events ? 0 : tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    size_t k = 0;
    for (struct submit_work *w = list; !rc && w; w = w->next) {
        if (w->rc || is_replay(w))
            continue;
        for (int i = 0; i < w->nids; i++, k++) {
            rows[k].job = &w->job;
            rows[k].owner = w->req->token.name;
            rows[k].name = w->nids > 1 ? w->names + (size_t)i * MEMBER_NAME_SIZE
                                       : json_string_value(json_object_get(w->spec, "name"));
            rows[k].spec = w->specs[i]; /* the insert takes it */
            w->specs[i] = NULL;
            events[k].project = w->job.project; /* no lookup of the row just inserted */
            events[k].message = w->nids > 1 ? "submitted as part of an array" : "submitted";
        }
    }
    if (!rc)
        rc = store_jobs_insert_many(srv->store, rows, k, now, err);
    for (size_t i = 0; i < k; i++) { /* taken by the insert; left when it did not run */
        free(rows[i].spec);
        events[i].job_id = rows[i].id;
    }
    if (!rc)
        rc = store_events_add_many(srv->store, now, "job_submitted", events, k, err);
    k = 0;
    for (struct submit_work *w = list; !rc && w; w = w->next) {
        if (w->rc || is_replay(w))
            continue;
        for (int i = 0; i < w->nids; i++)
            w->ids[i] = rows[k + (size_t)i].id;
        rc = record_work(srv, w, rows + k, now, err);
        k += (size_t)w->nids;
    }
    free(rows);
    free(events);
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
            server_resync_cluster(srv, now);
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

static void commit_batch(struct server *srv, struct submit_work *list)
{
    int64_t now = clock_now_ms();
    size_t inserts = 0, replays = 0, keyed = 0;
    for (struct submit_work *w = list; w; w = w->next)
        keyed += w->idempotency_key != NULL;
    struct key_index idx = {0};
    if (keyed > 1)
        key_index_init(&idx, keyed);
    for (struct submit_work *w = list; w; w = w->next) {
        check_work(srv, list, &idx, w, now);
        if (w->idempotency_key && !w->rc && idx.slots)
            key_add(&idx, w); /* the first of its key not refused */
        if (!w->rc && is_replay(w))
            replays++;
        else if (!w->rc)
            inserts++;
    }
    free(idx.slots);
    struct tide_err err;
    tide_err_clear(&err);
    int rc = inserts ? store_begin(srv->store, &err) : 0;
    size_t rows = 0;
    for (struct submit_work *w = list; inserts && !rc && w; w = w->next) {
        if (w->rc || is_replay(w))
            continue;
        w->nids = work_count(w);
        w->ids = calloc((size_t)w->nids, sizeof *w->ids);
        rows += (size_t)w->nids;
        if (!w->ids)
            rc = tide_err_set(&err, TIDE_ENOMEM, NULL, "out of memory");
    }
    if (inserts && !rc)
        rc = insert_all(srv, list, rows, now, &err);
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

/* On the HTTP thread, before the lock: w's rows' spec texts (and their
 * copies for the answer, and an array's names), so that the batch's
 * commit only inserts them. Out of memory refuses w alone. */
static void prepare_work(struct submit_work *w)
{
    int count = work_count(w);
    w->specs = calloc((size_t)count, sizeof *w->specs);
    w->texts = w->ids_only ? NULL : calloc((size_t)count, sizeof *w->texts);
    w->names = count > 1 ? malloc((size_t)count * MEMBER_NAME_SIZE) : NULL;
    bool ok = w->specs && (w->ids_only || w->texts) && (count == 1 || w->names);
    char **made = w->ids_only ? w->specs : w->texts;
    if (ok && count > 1)
        ok = member_texts(w->spec, count, made, w->names) == 0;
    else if (ok)
        ok = (made[0] = json_write_compact(w->spec, false, NULL)) != NULL;
    for (int i = 0; ok && !w->ids_only && i < count; i++)
        ok = (w->specs[i] = strdup(w->texts[i])) != NULL;
    if (!ok)
        w->rc = tide_err_set(&w->err, TIDE_ENOMEM, NULL, "out of memory");
}

/* What prepare_work made and the batch did not take. */
static void release_prepared(struct submit_work *w)
{
    int count = work_count(w);
    for (int i = 0; i < count; i++) {
        if (w->specs)
            free(w->specs[i]);
        if (w->texts)
            free(w->texts[i]);
    }
    free(w->specs);
    free(w->texts);
    free(w->names);
    w->specs = w->texts = NULL;
    w->names = NULL;
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
    w->specs = w->texts = NULL;
    w->names = NULL;
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
        prepare_work(works[i]);
        if (i > 0)
            works[i - 1]->next = works[i];
    }
    struct submit_batch *sb = srv->submits;
    if (!sb) {
        pthread_mutex_lock(&srv->lock);
        commit_batch(srv, works[0]);
        pthread_mutex_unlock(&srv->lock);
    } else {
        queue_and_wait(sb, srv, works[0], works[n - 1]);
    }
    for (size_t i = 0; i < n; i++)
        release_prepared(works[i]);
}

void submit_batch_run(struct server *srv, struct submit_work *w)
{
    submit_batch_run_many(srv, &w, 1);
}
