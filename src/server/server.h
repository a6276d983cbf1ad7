/*
 * The server's shared state and the functions its parts call on each other.
 * One mutex guards the cluster cache, the scheduler and the store: HTTP
 * threads and the scheduler thread take it for short, bounded work.
 */
#ifndef TIDE_SERVER_H
#define TIDE_SERVER_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/dir_spares.h"
#include "common/tide_err.h"
#include "core/action.h"
#include "core/budget.h"
#include "core/cluster.h"
#include "core/eta.h"
#include "core/pool.h"
#include "core/queue.h"
#include "core/sched.h"
#include "core/submit_limits.h"
#include "server/metrics.h"
#include "server/auth_cache.h"
#include "server/auth_known.h"
#include "server/auth_limit.h"
#include "server/auth_memo.h"
#include "server/lead.h"
#include "server/wake_slots.h"
#include "store/store.h"

#define SERVER_MAX_BODY_BYTES SUBMIT_MAX_BODY_BYTES
#define TIDE_MAX_PROJECT_USERS 256

struct server_config {
    char listen_host[64];
    int listen_port;
    /* server.agent_listen (--agent-listen): a second listener serving only
     * the agent protocol and /healthz, with its own connection budget;
     * the main one then refuses the agent routes (http.c). */
    bool agent_listen;
    char agent_listen_host[64];
    int agent_listen_port;
    char data_dir[512];
    int64_t node_timeout_ms;
    int heartbeat_interval_ms;
    int kill_grace_s;
    int node_fault_limit;        /* GPU faults within the window that fail a node; 0: never */
    int64_t node_fault_window_s;
    int sched_interval_ms;
    struct pool pools[TIDE_MAX_POOLS]; /* tide.yaml pools: (config_pools.c) */
    int npools;
    struct queue_set queues;
    struct fairshare fairshare; /* projects: quotas, weights, decayed use */
    struct budget_set budgets;  /* projects: daily/monthly budgets (core/budget.h) */
    /* projects: user, the user a project's jobs run as when they name none
     * (config_projects.c; the agents must allow it, docs/agent.md) */
    struct {
        char project[TIDE_NAME_MAX];
        char user[33];
    } project_users[TIDE_MAX_PROJECT_USERS];
    int nproject_users;
    /* retention: (config_retention.c); 0 keeps forever */
    int64_t retention_jobs_s;   /* finished jobs: rows, events, logs, checkpoints */
    int64_t retention_events_s; /* any event */
    int retention_sweep_s;      /* how often the sweeper looks */
    /* TLS (http_tls.c): PEM files, "" for none */
    char tls_cert[512], tls_key[512];
    char tls_client_ca[512];  /* agents must present a certificate this CA signed */
    bool tls_client_cn_is_node; /* ... whose common name is their node's name */
    bool insecure_plain_http; /* allow plain HTTP on an address other than loopback */
    char advertise_url[256];  /* --advertise-url; "" derives it from the listener */
    char agent_servers[1024]; /* --agent-servers: TIDE_SERVER for providers' agents; "": ours */
    /* --store / server.store: a PostgreSQL URL or a SQLite path; "": DATA/tide.db */
    char store[1024];
    /* server.shared_join_token: false (--no-shared-join-token): DATA/join.token
     * registers nothing; only node-bound join tokens do (auth.c). */
    bool shared_join_token_off;
};

/* How attempts end other than in success, counted for /metrics. */
enum failure_class {
    FAILURE_EXIT,
    FAILURE_SIGNAL,
    FAILURE_OOM,
    FAILURE_NODE_LOST,
    FAILURE_TIMEOUT,
    FAILURE_PREEMPTED,
    FAILURE_IDLE_RECLAIM,
    FAILURE_START,
    FAILURE_CLASS_COUNT
};
extern const char *const failure_class_names[FAILURE_CLASS_COUNT];

/* GPU faults by kind, counted for /metrics (api_health.c). */
enum gpu_fault_kind { GPU_FAULT_XID, GPU_FAULT_ECC, GPU_FAULT_TEMP, GPU_FAULT_LOST,
                      GPU_FAULT_OTHER, GPU_FAULT_KIND_COUNT };
extern const char *const gpu_fault_kind_names[GPU_FAULT_KIND_COUNT];

/* What a heartbeat's health reports did (api_health.c), kept until it is
 * persisted after the heartbeat's actions. */
#define HEALTH_MAX_FAULTS 64
struct health_notes {
    int nfaults;
    struct {
        int gpu_index;
        char fault[48];
        int bits;  /* GPU_HEALTH_* (core/gpu_health.h) */
        int count; /* faults since the last heartbeat */
    } faults[HEALTH_MAX_FAULTS];
    int probe; /* 1 drained by the probe, -1 undrained, 0 nothing */
};

struct api_reply;
struct server;

/* The listeners (http.c): the main one serves everything (but the agent
 * routes when an agent listener exists), the agent one only those. */
enum http_role { HTTP_MAIN, HTTP_AGENT, HTTP_ROLE_COUNT };
struct http_front {
    struct server *srv;
    enum http_role role;
};
/* Under the lock, before the heartbeat's reconcile: reads the GPU faults
 * ("gpus"[].fault, fault_seq, node_wide) and the probe result
 * ("health_probe") of body, applies the new ones to node (core/gpu_health.h)
 * with their actions appended to out, and notes what to persist. 0, or -1
 * with reply filled (a malformed field, named); TIDE_ENOMEM as -1 too. */
int api_health_from_heartbeat(struct server *srv, struct node *node, json_t *body, int64_t now_ms,
                              struct action_list *out, struct health_notes *notes,
                              struct api_reply *reply);

/* Persists notes for node_id (events, drain, GPU faults) in a transaction
 * of its own. */
int api_health_persist(struct server *srv, int64_t node_id, const struct health_notes *notes,
                       int64_t now_ms, struct tide_err *err);

struct report_waiter; /* api_agent.c */

struct server {
    struct server_config cfg;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* signalled when the scheduler has work (sched_loop.c) */
    bool sched_waiting; /* the scheduler thread waits for a kick (not in a pass or its rest) */
    bool sched_wanted;
    bool sched_submitted; /* new jobs since the last pass (sched_loop_kick_submitted) */
    /* agent_wake.c: per node, what was decided and delivered and the
     * condition its agent's POST /v1/agent/wait parks on (wake_slots.h). */
    struct wake_slots agent_wake;
    /* api_agent.c: heartbeats that reported an exit and wait for the pass
     * it kicked, and their wake-up (CLOCK_MONOTONIC) */
    struct report_waiter *report_waiters;
    pthread_cond_t report_pass;
    volatile int stopping;
    struct store *store;
    struct server_lead lead; /* leader or follower (lead.h, docs/ha.md) */
    int data_lock_fd; /* data_lock.h: held while the server runs; 0 before */
    struct cluster cluster;
    struct scheduler sched;
    struct action_list actions; /* scratch, under lock */
    struct pool_loop *pool_loop; /* elastic pools (pool_loop.h); NULL without pools */
    struct auth_limit auth_limit; /* failed authentications per address */
    struct auth_cache auth_cache; /* recently seen admin and user tokens (auth_cache.h) */
    struct auth_known auth_known; /* tokens seen passing, let through the limit (auth_known.h) */
    struct retention *retention;  /* the sweeper (retention.h); NULL when all is kept */
    struct dir_spares *checkpoint_spares; /* for DATA/checkpoints/ID; NULL: each is made */
    struct submit_batch *submits; /* group commit of submissions (submit_batch.h); NULL: inline */
    struct usage_meter *usage; /* the usage ledger (usage_meter.h); NULL before start */
    struct http_front fronts[HTTP_ROLE_COUNT]; /* what each listener's requests carry (http.c) */
    /* Counters for /metrics, under lock. */
    long long http_requests; /* atomic (__atomic builtins), not under lock */
    long long http_connections; /* connections accepted; atomic like http_requests */
    long long log_syncs;        /* log_store_sync calls of heartbeats; atomic likewise */
    long long sched_passes;
    long long jobs_submitted;
    long long failures[FAILURE_CLASS_COUNT];
    long long gpu_faults[GPU_FAULT_KIND_COUNT]; /* by kind (api_health.c) */
    struct server_metrics metrics; /* histograms and finished jobs (metrics.h), own mutex */
    /* Start-time ETAs (eta_refresh.c), under lock. */
    struct eta_plan eta_plan;
    struct eta_estimator eta_est;
    int64_t eta_refreshed_ms;
    int64_t eta_last_us, eta_max_us; /* how long the last and the longest plan took */
    long long eta_refreshes;
};

/* A request as the handlers see it. */
struct api_request {
    const char *method;
    const char *path; /* without the query string */
    struct MHD_Connection *conn;
    const char *body;
    size_t body_len;
    struct token_info token; /* valid once authenticated */
    char token_hash[65];     /* its SHA-256 hex, to use up a node-bound join token */
    struct auth_memo *auth_memo; /* the connection's last token and hash (NULL: none) */
};

/* What a handler answers: JSON (status + body), plain text, or a ready
 * MHD response (streams). */
struct api_reply {
    int status;
    json_t *json;
    char *text; /* malloc'ed; text/plain unless content_type says otherwise */
    const char *content_type;
    struct MHD_Response *response;
    bool close_connection; /* the connection is closed once this is sent */
};

/* Fills reply with the standard error body; returns 0 so handlers can
 * `return api_error(...)`. */
int api_error(struct api_reply *reply, const struct tide_err *err);
int api_error_msg(struct api_reply *reply, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* req's body as a JSON object (a new reference; duplicate keys refused)
 * whose fields are all in known (NULL-terminated), or NULL with reply
 * filled: 400 "body must be a JSON object", or naming the first unknown
 * field. */
json_t *api_body_object(const struct api_request *req, const char *const *known,
                        struct api_reply *reply);

/* The query parameter name, or NULL. */
const char *api_query(const struct api_request *req, const char *name);
/* api_query in the shape the *_params_parse functions take (ctx: the
 * struct api_request). */
const char *api_query_get(void *ctx, const char *name);
/* The first query parameter not in known (NULL-terminated), or NULL. */
const char *api_query_unknown(const struct api_request *req, const char *const *known);

/* Handlers: 0 when reply is filled (even with an error status). */
int api_jobs_submit(struct server *srv, struct api_request *req, struct api_reply *reply);
/* api_jobs.c: checks a submitted spec (given, not consumed) as POST /v1/jobs
 * does, without the lock: its fields, its queue, the token's project
 * (whether it could ever run is checked at the commit, submit_batch.c).
 * 0 with *spec (new reference) and job filled, or an error in err. */
int api_jobs_check_spec(struct server *srv, const struct api_request *req, json_t *given,
                        json_t **spec, struct job *job, struct tide_err *err);
#define IDEMPOTENCY_KEY_MAX 128
/* 1 to IDEMPOTENCY_KEY_MAX printable ASCII characters. */
bool api_idempotency_key_valid(const char *key);
/* api_jobs_batch.c: POST /v1/jobs:batch, many specs in one transaction. */
int api_jobs_submit_batch(struct server *srv, struct api_request *req, struct api_reply *reply);
/* GET /v1/jobs: pages of JOBS_PAGE_DEFAULT jobs (limit up to
 * JOBS_PAGE_MAX, what tide cancel --project asks for in one page), newest
 * first, the next page from the reply's "next". */
#define JOBS_PAGE_DEFAULT 1000
#define JOBS_PAGE_MAX 100000
int api_jobs_list(struct server *srv, struct api_request *req, struct api_reply *reply);
int api_jobs_get(struct server *srv, struct api_request *req, int64_t id, struct api_reply *reply);
int api_jobs_cancel(struct server *srv, struct api_request *req, int64_t id, struct api_reply *reply);
int api_jobs_logs(struct server *srv, struct api_request *req, int64_t id, struct api_reply *reply);
int api_agent_register(struct server *srv, struct api_request *req, struct api_reply *reply);
/* Whether name may name a node: 1 to TIDE_NAME_MAX - 1 letters, digits, '-', '_', '.'. */
bool api_agent_node_name_valid(const char *name);
int api_agent_heartbeat(struct server *srv, struct api_request *req, struct api_reply *reply);
/* The scheduler thread around a pass's apply_actions (sched_loop.c), lock
 * held throughout. Before: the nodes of heartbeats waiting for the pass
 * their exit kicked are held (agent_wake_hold), so their long-polls are not
 * woken for what those replies will carry. After (on failure too): each
 * such reply takes its node's starts and stops, derived from state, they
 * are marked delivered (which ends the hold) and the heartbeats go on. */
void api_agent_actions_applying(struct server *srv);
void api_agent_actions_applied(struct server *srv);
/* What node's agent is to do now, derived from state as a heartbeat that
 * mentions only the tasks the server knows it has would: a "start" for each
 * task placed there and not yet reported, a "stop" for each reported one
 * being cancelled, reclaimed, preempted or stopped with its gang. Caller
 * holds the lock; changes nothing (a lost answer loses nothing). */
json_t *api_agent_node_actions(struct server *srv, const struct node *node);
/* Creates the checkpoint directory of each start message in actions (a
 * JSON array; NULL is fine), from srv's spares when one is ready. Called
 * after the lock is released and before the reply goes: creating a job's
 * directory is a filesystem write that need not hold up other requests. */
void api_agent_make_checkpoint_dirs(struct server *srv, json_t *actions);
/* The agent protocol's body parsers, without a server (for tests/fuzz/):
 * a registration into node; a heartbeat's tasks into out (at most 1024,
 * *n set); its gpus telemetry into node, all checked before any is kept.
 * 0, or -1 with reply holding the 400 that names the field. */
struct task_report;
int api_agent_parse_registration(json_t *body, struct node *node, struct api_reply *reply);
int api_agent_parse_reports(json_t *tasks, struct task_report *out, size_t *n,
                            struct api_reply *reply);
int api_agent_update_telemetry(struct node *node, json_t *gpus, struct api_reply *reply);
int api_nodes_list(struct server *srv, struct api_request *req, struct api_reply *reply);
int api_events_list(struct server *srv, struct api_request *req, struct api_reply *reply);
int api_tokens_create(struct server *srv, struct api_request *req, struct api_reply *reply);
int api_tokens_list(struct server *srv, struct api_request *req, struct api_reply *reply);
int api_tokens_revoke(struct server *srv, struct api_request *req, const char *name,
                      struct api_reply *reply);
/* The longest life a user token may be given (expires_in_s). */
#define TOKEN_MAX_LIFE_S (10LL * 365 * 86400)
int api_metrics(struct server *srv, struct api_request *req, struct api_reply *reply);
int api_queues_list(struct server *srv, struct api_request *req, struct api_reply *reply);
int api_projects_list(struct server *srv, struct api_request *req, struct api_reply *reply);
int api_usage_get(struct server *srv, struct api_request *req, struct api_reply *reply);
/* web.c: GET / and GET /static/NAME, the embedded dashboard (no token). */
int api_web_static(struct server *srv, struct api_request *req, struct api_reply *reply);
/* api_ops.c: POST /v1/jobs/{id}/hold|release|requeue (op is the last word). */
int api_jobs_operate(struct server *srv, struct api_request *req, int64_t id, const char *op,
                     struct api_reply *reply);
/* api_ops.c: POST /v1/nodes/{name}/drain|undrain, DELETE /v1/nodes/{name} (op "delete"). */
int api_nodes_operate(struct server *srv, struct api_request *req, const char *name,
                      const char *op, struct api_reply *reply);

/* auth_files.c: creates admin.token and join.token on first start, reads
 * them back later (a file holding a rotated-out token gets a new one). */
int auth_bootstrap(struct server *srv, struct tide_err *err);
/* auth_files.c: replaces the admin (TOKEN_ADMIN) or shared join
 * (TOKEN_JOIN) token: every earlier one of that kind becomes TOKEN_ROTATED
 * (*rotated says how many) and a new one is issued into out, in one
 * transaction, then written to this server's DATA file. 0 once stored;
 * the file not written is then said in file_err (out is the only copy). */
int auth_rotate(struct server *srv, enum token_kind kind, char out[65], int *rotated,
                struct tide_err *file_err, struct tide_err *err);
/* api_token_rotate.c: POST /v1/tokens:rotate {"kind": "admin"|"join"}. */
int api_tokens_rotate(struct server *srv, struct api_request *req, struct api_reply *reply);
/* Checks the bearer token of req; fills req->token. 0, TIDE_EAUTH. A
 * used-up join token passes only to the registration, which takes it from
 * the run that used it alone (api_agent.c). */
int auth_check(struct server *srv, struct api_request *req, struct tide_err *err);
/* Whether req's body is worth reading: its token is one that passed here
 * before, or passes now. A request that cannot be authenticated gets its
 * answer (401, 429) without its body held in memory (up to the 1 MiB
 * limit per connection, before any token was looked at). */
bool auth_body_wanted(struct server *srv, struct api_request *req);
/* Whether the token of hash (req->token_hash of a request that passed)
 * still does: not revoked, rotated out or expired since. For answers that
 * stream for long (a followed log). */
bool auth_still_passes(struct server *srv, const char hash[65]);
/* The 401 of a used-up join token; returns TIDE_EAUTH. */
int auth_join_used_error(const struct api_request *req, struct tide_err *err);
/* Issues a new random token of kind and stores its hash; out gets the value. */
int auth_issue(struct server *srv, enum token_kind kind, const char *name, json_t *projects,
               int64_t node_id, char out[65], struct tide_err *err);
/* True when the request's token may act on project. */
bool auth_project_allowed(const struct api_request *req, const char *project);

/* apply.c: persists an action list (one transaction) under the lock. On
 * failure rolls back and reloads the cluster from the store. */
int apply_actions(struct server *srv, const struct action_list *actions, int64_t now_ms,
                  struct tide_err *err);
/* The same, committed without waiting for the disk (store_commit_deferred):
 * for the heartbeat and the scheduling pass, whose decisions leave only in
 * HTTP answers, and every answer waits for store_sync (http.c). The
 * server's lock is then not held across the disk's flush, and the flush is
 * shared by the answers waiting at the same time. */
int apply_actions_deferred(struct server *srv, const struct action_list *actions, int64_t now_ms,
                           struct tide_err *err);
/* Rebuilds the cluster cache from the store (at start). On failure the
 * cache is left as it was. */
int server_reload_cluster(struct server *srv, int64_t now_ms, struct tide_err *err);
/* After a write the store refused: brings the cache back to what is
 * stored (server_reload_cluster), or, when that fails too, stops the
 * process at once (exit status 3, as a lost lead): a cache ahead of the
 * store must not answer agents. */
void server_resync_cluster(struct server *srv, int64_t now_ms);

/* sched_loop.c: the scheduler thread. */
int sched_loop_start(struct server *srv, pthread_t *thread);
/* Asks the scheduler thread for a pass soon (caller holds the lock). */
void sched_loop_kick(struct server *srv);
/* The same for new submissions: the pass comes after a longer rest, as
 * long as SCHED_SUBMIT_REST passes, unless something else kicks. */
#define SCHED_SUBMIT_REST 4
void sched_loop_kick_submitted(struct server *srv);

/* eta_refresh.c: pending jobs' ETAs, refreshed at most this often. */
#define ETA_REFRESH_MS 1000
/* After a pass (its order still valid), unless the last refresh is
 * younger than ETA_REFRESH_MS: plans the ETAs. Caller holds the lock. */
void eta_refresh(struct server *srv, int64_t now_ms);
/* After actions were persisted: the attempts that ended feed the learned
 * runtimes (their project and queue from the store). */
void eta_refresh_learn(struct server *srv, const struct action_list *actions, int64_t now_ms);
/* At start: learns the runs of the store's ETA_SEED_JOBS newest jobs that
 * ran and ended. */
#define ETA_SEED_JOBS 5000
void eta_refresh_seed(struct server *srv);

/* log_store.c: per-attempt task logs under DATA/logs/<job>/<attempt>.log. */
/* Appends data at offset (bytes already held are skipped). Returns the
 * size the log has afterwards, or a negative error. */
int64_t log_store_append(const char *data_dir, int64_t job_id, int attempt, int64_t offset,
                         const char *data, size_t len);
int64_t log_store_size(const char *data_dir, int64_t job_id, int attempt);
/* Flushes the attempt's log to disk, and the directories that name it (a
 * log made since the last flush must be found after a crash). 1 when it
 * did, 0 when there is no log, or a negative errno. */
int log_store_sync(const char *data_dir, int64_t job_id, int attempt);
/* Reads up to max bytes of the attempt's log from offset into buf. */
int64_t log_store_read(const char *data_dir, int64_t job_id, int attempt, int64_t offset, char *buf,
                       size_t max);

/* http.c: starts the listener for role (HTTP_AGENT only with
 * cfg.agent_listen) on its address from cfg, TLS as configured. */
struct MHD_Daemon;
int http_start(struct server *srv, enum http_role role, struct MHD_Daemon **out,
               struct tide_err *err);

#endif
