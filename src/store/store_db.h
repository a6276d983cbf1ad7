/*
 * For the store's own modules (src/store/store_*.c): the connections under
 * a store and its statements kept for hot paths. Nothing outside src/store
 * includes this header, so only the store knows which database runs.
 */
#ifndef TIDE_STORE_DB_H_INTERNAL
#define TIDE_STORE_DB_H_INTERNAL

#include "store/db.h"
#include "store/store.h"

/* The connection for writes and for reads under the server's lock. */
struct db *store_db(struct store *s);

/* A second connection for listings read without the server's lock
 * (committed data only); its calls are serialized by the layer. */
struct db *store_reader(struct store *s);

/* Statements on hot paths, prepared once per store and kept until
 * store_close: store_cached returns slot's statement (preparing sql the
 * first time) reset and with its bindings cleared, ready to bind and step;
 * NULL with err on failure. Reset it after stepping. */
enum store_stmt_slot {
    STORE_STMT_EVENT_ADD,
    STORE_STMT_JOB_INSERT,
    STORE_STMT_JOB_UPDATE, /* every job transition */
    STORE_STMT_JOB_GET,    /* an agent's start message, learned runtimes */
    STORE_STMT_JOB_QUEUE,  /* a finished job's metrics */
    STORE_STMT_TOKEN_GET,  /* each agent message (node tokens are not cached) */
    STORE_STMT_JOB_SPEC,   /* an agent's start message */
    STORE_STMT_JOB_RAN,    /* each ended attempt's runtime, for ETAs */
    STORE_STMT_JOB_IDS,
    STORE_STMT_IDEMPOTENCY_GET,
    STORE_STMT_IDEMPOTENCY_DROP,
    STORE_STMT_IDEMPOTENCY_PUT,
    /* multi-row INSERTs, one slot per size of store_multirow_sizes */
    STORE_STMT_JOB_INSERT_MANY,
    STORE_STMT_EVENT_ADD_MANY = STORE_STMT_JOB_INSERT_MANY + 4,
    STORE_STMT_COUNT = STORE_STMT_EVENT_ADD_MANY + 4
};

/* The row counts of the multi-row INSERTs of store_jobs_insert_many and
 * store_events_add_many, largest first: n rows go as chunks of these
 * sizes, each a statement prepared once (64 rows, then what is left as
 * 16s, 4s and 1s). */
extern const size_t store_multirow_sizes[4];

/* The largest size of store_multirow_sizes not over n, and its index. */
size_t store_multirow_chunk(size_t n, int *index);

/* "HEAD" then rows copies of "(ROW)" joined by commas (malloc'd; NULL when
 * out of memory). */
char *store_multirow_sql(const char *head, const char *row, size_t rows);

struct db_stmt *store_cached(struct store *s, enum store_stmt_slot slot, const char *sql,
                             struct tide_err *err);
/* store_cached for a multi-row INSERT: store_multirow_sql(head, row,
 * rows) is built only the first time, when slot is prepared. NULL with
 * err (TIDE_ENOMEM or TIDE_EIO) on failure. */
struct db_stmt *store_cached_multirow(struct store *s, enum store_stmt_slot slot, const char *head,
                                      const char *row, size_t rows, struct tide_err *err);

/* Brings the database's tables up to this binary's schema version
 * (store_schema.c); refuses a newer one. */
int store_schema_migrate(struct store *s, struct tide_err *err);

#endif
