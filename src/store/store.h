/*
 * Durable state: jobs, nodes, tokens and the event log. The server calls
 * these under its lock; every change that a client or agent is told about
 * is committed first. The same code runs on SQLite (one file, the default)
 * or PostgreSQL (shared by several servers for HA): SQL goes through a
 * small connection layer (db.h), and only src/store knows which one runs.
 * The tables follow versioned migrations (store_schema.c, docs/store.md).
 *
 * Times are Unix milliseconds. JSON values are jansson objects: functions
 * that return one give the caller a new reference to json_decref.
 */
#ifndef TIDE_STORE_H
#define TIDE_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/tide_err.h"
#include "core/cluster.h"

/* Stored as integers: append new kinds. TOKEN_METRICS may read /metrics only.
 * TOKEN_JOIN_BOUND registers only the node its name names, once; it then
 * becomes TOKEN_JOIN_USED, which only that registration's agent run may
 * use again, to register once more (store_tokens.h, api_agent.c).
 * TOKEN_ROTATED is an admin or shared join token replaced by a rotation:
 * refused, and kept so that a server whose file still holds it does not
 * store it again as valid at its next start (auth_files.c). */
enum token_kind {
    TOKEN_ADMIN,
    TOKEN_USER,
    TOKEN_JOIN,
    TOKEN_NODE,
    TOKEN_METRICS,
    TOKEN_JOIN_BOUND,
    TOKEN_JOIN_USED,
    TOKEN_ROTATED
};

struct token_info {
    enum token_kind kind;
    char name[TIDE_NAME_MAX];
    json_t *projects; /* array of names; NULL = every project. Owned by the caller. */
    int64_t node_id;  /* TOKEN_NODE only */
    int64_t expires_ms; /* 0: never */
};

struct job_filter {
    const char *state;   /* NULL = any */
    const char *queue;
    const char *project;
    json_t *projects;    /* allowed projects, NULL = all */
    int limit;           /* 0: 1000 */
    int64_t after_id;    /* > 0: only jobs listed after this one */
    int oldest_first;    /* list by rising id (after_id: higher ids) */
};

/* A job row change. Fields set to their "keep" values are not written. */
struct job_update {
    int64_t job_id;
    enum job_state state;
    const char *reason;
    int attempt;          /* -1: keep */
    int64_t node_id;      /* -1: keep, 0: clear */
    const int *gpus;      /* with ngpus; NULL: keep unless node_id is 0 */
    int ngpus;
    int exit_code;        /* -2: keep, -1: null */
    int signal;           /* -1: keep, 0: null */
    int64_t start_ms;     /* 0: keep; negative: -start_ms if none is set yet */
    int64_t end_ms;       /* 0: keep */
    int cancel_requested; /* -1: keep */
    json_t *parts;        /* a gang job's other nodes, [[node_id, [gpu, ...]], ...]; NULL: keep
                             (cleared with node_id 0) */
};

struct store;

/* Opens the store: a postgres:// or postgresql:// URL is a PostgreSQL
 * database (libpq's URL syntax), anything else the path of a SQLite file,
 * created if needed. Migrates the tables to this binary's schema version,
 * refusing a database whose version is newer. Errors name the database with
 * its password masked. */
int store_open(const char *url_or_path, struct store **out, struct tide_err *err);
/* True for the URLs store_open takes as PostgreSQL. */
bool store_is_url(const char *url_or_path);
/* url_or_path fit to show: a URL's password (user:PASSWORD@, password=)
 * becomes ***. Truncated to size. */
void store_url_shown(const char *url_or_path, char *out, size_t size);
void store_close(struct store *s);

/* A transaction; its commit returns once it is on disk. */
int store_begin(struct store *s, struct tide_err *err);
int store_commit(struct store *s, struct tide_err *err);
void store_rollback(struct store *s);

/* Commits without waiting for the disk: visible at once, on disk after the
 * next store_sync (db.h, db_commit_deferred). For a caller whose effects
 * leave the server only in HTTP answers, which wait for store_sync. */
int store_commit_deferred(struct store *s, struct tide_err *err);
/* Returns once every commit so far is on disk, sharing one flush with the
 * threads that ask meanwhile. Thread-safe, without the server's lock. */
int store_sync(struct store *s, struct tide_err *err);
/* Disk flushes of the store's commits so far (0 on PostgreSQL). */
uint64_t store_sync_count(struct store *s);

/* Tokens are looked up by the SHA-256 hex of their value. */
int store_token_put(struct store *s, const char *hash, enum token_kind kind, const char *name,
                    json_t *projects, int64_t node_id, int64_t now_ms, struct tide_err *err);
/* 0 and *out filled, TIDE_ENOENT when unknown. Its statement is kept, as
 * store_job_update's is: callers hold the server's lock. */
int store_token_get(struct store *s, const char *hash, struct token_info *out,
                    struct tide_err *err);
int store_token_delete_node(struct store *s, int64_t node_id, struct tide_err *err);
void token_info_release(struct token_info *t);

/* Inserts or updates the node called node->name (info: its registration
 * JSON); sets node->id. */
int store_node_upsert(struct store *s, struct node *node, json_t *info, int64_t now_ms,
                      struct tide_err *err);
int store_node_set_state(struct store *s, int64_t node_id, enum node_state state,
                         struct tide_err *err);
/* Sets a node's state and its operator drain: reason NULL when undrained. */
int store_node_set_drain(struct store *s, int64_t node_id, enum node_state state,
                         const char *reason, struct tide_err *err);
/* Marks a node deleted (no longer loaded; jobs and events keep its name)
 * and revokes its node tokens. Registering the name again revives it. */
int store_node_delete(struct store *s, int64_t node_id, struct tide_err *err);
/* Adds every stored node to c (lost or ready, as stored), with
 * last_heartbeat_ms = now_ms so agents get a full timeout to come back. */
int store_nodes_load(struct store *s, struct cluster *c, int64_t now_ms, struct tide_err *err);

/* One row of store_jobs_insert_many: a new pending job. */
struct store_new_job {
    const struct job *job; /* its project, queue and priority */
    const char *name;
    const char *owner;     /* the submitting token's name */
    char *spec;            /* its spec as JSON text; taken (freed) by the insert */
    int64_t id;            /* set by the insert */
};

/* Inserts n pending jobs in the open transaction, several rows a
 * statement (a few round trips on PostgreSQL, not one a job), and sets
 * each row's id: increasing in row order, new ids as store_job_insert's
 * (never one in use). Every spec is freed, also on failure. */
int store_jobs_insert_many(struct store *s, struct store_new_job *rows, size_t n, int64_t now_ms,
                           struct tide_err *err);

/* Inserts a pending job; sets job->id and job->submit_ms = now_ms. */
int store_job_insert(struct store *s, struct job *job, json_t *spec, const char *owner,
                     int64_t now_ms, struct tide_err *err);
/* One job transition. store_job_update, store_job_get and store_job_queue
 * keep their statement prepared on the write connection (store_db.h), so,
 * like every write, their callers must not run them at once (the server
 * holds its lock). */
int store_job_update(struct store *s, const struct job_update *u, struct tide_err *err);
/* Counts a requeued attempt of the job: free_attempt when it ended by no
 * fault of its own (preemption, an operator's requeue, its node lost, its
 * task vanished), which uses up no retry, across restarts too; and keeps
 * how many attempts in a row were lost (SCHED_MAX_LOST_ATTEMPTS). */
int store_job_count_attempt(struct store *s, int64_t job_id, bool free_attempt,
                            int lost_attempts, struct tide_err *err);
/* Keeps a requeued job from starting before at_ms (job.restart_after_ms:
 * its force-deleted node may still run it), across restarts too. */
int store_job_set_restart_after(struct store *s, int64_t job_id, int64_t at_ms,
                                struct tide_err *err);
/* Keeps what a gang job's parts did so far in its row: which ended (by
 * node) and its first failure. Cleared by every store_job_update that
 * changes the job's placement; read back by store_jobs_load_active. */
int store_job_gang_save(struct store *s, const struct job *job, struct tide_err *err);
/* Sets (reason) or clears (NULL) an operator's hold on a job. */
int store_job_set_hold(struct store *s, int64_t job_id, const char *reason, struct tide_err *err);
/* Adds every unfinished job to c, GPUs assigned as stored. */
int store_jobs_load_active(struct store *s, struct cluster *c, struct tide_err *err);
/* A job's state and project; TIDE_ENOENT when absent. */
int store_job_state(struct store *s, int64_t id, enum job_state *state, char project[TIDE_NAME_MAX],
                    struct tide_err *err);
/* The node (0: none) and attempt a job last ran as, finished or not;
 * TIDE_ENOENT when absent. */
int store_job_last_placement(struct store *s, int64_t id, int64_t *node_id, int *attempt,
                             struct tide_err *err);
/* A job's queue (for /metrics once it has left the cluster); TIDE_ENOENT when absent. */
int store_job_queue(struct store *s, int64_t id, char queue[TIDE_NAME_MAX], struct tide_err *err);
/* The job's spec as stored (a new reference in *out); TIDE_ENOENT when
 * absent. Cheaper than store_job_get when the spec is all that is needed. */
int store_job_spec(struct store *s, int64_t id, json_t **out, struct tide_err *err);
/* A job's project, queue and when its current attempt started running
 * (*start_ms 0: never); TIDE_ENOENT when absent. */
int store_job_ran(struct store *s, int64_t id, char project[TIDE_NAME_MAX],
                  char queue[TIDE_NAME_MAX], int64_t *start_ms, struct tide_err *err);
/* The job as the API shows it; TIDE_ENOENT when absent. */
int store_job_get(struct store *s, int64_t id, json_t **out, struct tide_err *err);
/* The jobs with ids first..last, in id order, appended to out (a JSON
 * array) as store_job_get makes them: one query for an array's members.
 * Returns 0, TIDE_ENOENT when one of them is missing, or an error. */
int store_jobs_get_range(struct store *s, int64_t first, int64_t last, json_t *out,
                         struct tide_err *err);
/* Up to f->limit jobs matching f, newest (highest id) first, as
 * store_job_get makes them; read on the read-only connection, so the
 * caller need not hold the server's lock (and sees only committed rows). */
int store_jobs_list(struct store *s, const struct job_filter *f, json_t **out,
                    struct tide_err *err);
/* {"state|queue": count} rows for /metrics: calls fn for each group. */
int store_jobs_count(struct store *s,
                     void (*fn)(const char *state, const char *queue, long long n, void *ctx),
                     void *ctx, struct tide_err *err);

/* Appends to the event log (store_events.c; filters and listing in
 * store_events.h). job_id / node_id 0 for none; the event's node name, pool
 * and project are taken from the node's and the job's rows. Cheap: no
 * commit of its own inside the caller's transaction. */
int store_event_add(struct store *s, int64_t now_ms, const char *kind, int64_t job_id,
                    int64_t node_id, const char *message, struct tide_err *err);

#endif
