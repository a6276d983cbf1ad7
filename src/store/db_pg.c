/*
 * PostgreSQL under the connection layer (db.h), through libpq. A statement
 * runs at its first step and its whole result is then read row by row, so
 * one connection serves several threads one call at a time (a mutex each).
 * `?N` and `?` placeholders become $N. Kept statements are prepared on the
 * server once, the others sent with their parameters each time. A connection
 * that breaks is not reopened by itself: db_lost turns true and every later
 * call fails until db_reconnect, which a pinned connection refuses, so a
 * server that held a session lock on it learns that it has lost the lock
 * instead of writing on a new session.
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

#define PG_TEXT_OID 25
#define PG_INT8_OID 20

struct db_pg {
    struct db base;
    PGconn *conn;
    pthread_mutex_t mu;
    bool lost;
    bool pinned;      /* a session lock was taken on it: never reconnected */
    unsigned session; /* counts reconnections: kept statements are per session */
    unsigned kept;    /* names of kept statements */
};

struct stmt_pg {
    struct db_stmt base;
    char *sql; /* with $N placeholders */
    int nparams;
    char **values; /* owned; NULL: SQL NULL */
    unsigned *types;
    bool keep, prepared;
    bool oom;         /* a binding's copy failed: the step says so */
    unsigned session; /* the connection's session it was prepared on */
    char name[24];
    PGresult *res;
    int row;
    int64_t changes;
};

static struct db_pg *pg(struct db *db)
{
    return (struct db_pg *)db;
}

static struct stmt_pg *pst(struct db_stmt *st)
{
    return (struct stmt_pg *)st;
}

/* Fills err with libpq's message (its trailing newline cut) and notes a
 * broken connection. Called with the connection's mutex held. */
static int fail(struct db_pg *d, const PGresult *res, struct tide_err *err, const char *what)
{
    const char *msg = res ? PQresultErrorMessage(res) : "";
    if (!msg[0])
        msg = PQerrorMessage(d->conn);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (PQstatus(d->conn) == CONNECTION_BAD ||
        (state && (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3))))
        d->lost = true;
    int len = (int)strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
        len--;
    return tide_err_set(err, TIDE_EIO, NULL, "database: %s: %.*s", what, len,
                        len ? msg : "no answer from PostgreSQL");
}

static int lost_error(struct tide_err *err, const char *what)
{
    return tide_err_set(err, TIDE_EIO, NULL, "database: %s: the connection to PostgreSQL was lost",
                        what);
}

static void pg_close(struct db *db)
{
    struct db_pg *d = pg(db);
    PQfinish(d->conn);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

static int pg_exec(struct db *db, const char *sql, struct tide_err *err)
{
    struct db_pg *d = pg(db);
    pthread_mutex_lock(&d->mu);
    int rc = 0;
    if (d->lost) {
        rc = lost_error(err, "run");
    } else {
        PGresult *res = PQexec(d->conn, sql);
        ExecStatusType s = PQresultStatus(res);
        if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
            rc = fail(d, res, err, "run");
        /* COMMIT of a transaction that an error aborted rolls it back and
         * says so only in its command tag: that is no commit. */
        else if (!strcmp(sql, "COMMIT") && !strcmp(PQcmdStatus(res), "ROLLBACK"))
            rc = tide_err_set(err, TIDE_EIO, NULL,
                              "database: commit: rolled back after an earlier error");
        PQclear(res);
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* sql with each `?N` as $N and each bare `?` as $(highest so far + 1), as
 * SQLite numbers them; quoted text is copied as it is. */
static char *translate(const char *sql, int *nparams)
{
    size_t n = strlen(sql);
    char *out = malloc(n * 4 + 1); /* "?" becomes at most "$NNN" */
    if (!out)
        return NULL;
    size_t o = 0;
    int highest = 0;
    char quote = 0;
    for (size_t i = 0; i < n; i++) {
        char c = sql[i];
        if (quote) {
            if (c == quote)
                quote = 0;
            out[o++] = c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            out[o++] = c;
        } else if (c == '?') {
            int num = 0;
            size_t j = i + 1;
            while (j < n && sql[j] >= '0' && sql[j] <= '9' && num < 1000)
                num = num * 10 + (sql[j++] - '0');
            if (j == i + 1)
                num = highest + 1;
            if (num > highest)
                highest = num;
            o += (size_t)sprintf(out + o, "$%d", num);
            i = j - 1;
        } else {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    *nparams = highest;
    return out;
}

static struct db_stmt *pg_prepare(struct db *db, const char *sql, bool keep, struct tide_err *err)
{
    struct stmt_pg *s = calloc(1, sizeof *s);
    if (s)
        s->sql = translate(sql, &s->nparams);
    if (s && s->sql && s->nparams) {
        s->values = calloc((size_t)s->nparams, sizeof *s->values);
        s->types = calloc((size_t)s->nparams, sizeof *s->types);
    }
    if (!s || !s->sql || (s->nparams && (!s->values || !s->types))) {
        if (s) {
            free(s->sql);
            free(s->values);
            free(s->types);
            free(s);
        }
        tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    s->base.db = db;
    s->keep = keep;
    s->row = -1;
    if (keep) {
        pthread_mutex_lock(&pg(db)->mu);
        snprintf(s->name, sizeof s->name, "tide_%u", ++pg(db)->kept);
        pthread_mutex_unlock(&pg(db)->mu);
    }
    return &s->base;
}

static void set_param(struct db_stmt *st, int i, char *v, unsigned type)
{
    struct stmt_pg *s = pst(st);
    if (i < 1 || i > s->nparams) {
        free(v);
        return;
    }
    if (!v && type)
        s->oom = true;
    free(s->values[i - 1]);
    s->values[i - 1] = v;
    s->types[i - 1] = type;
}

static void pg_bind_int64(struct db_stmt *st, int i, int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    set_param(st, i, strdup(buf), PG_INT8_OID);
}

static void pg_bind_text(struct db_stmt *st, int i, const char *v)
{
    set_param(st, i, strdup(v), PG_TEXT_OID);
}

static void pg_bind_text_take(struct db_stmt *st, int i, char *v)
{
    set_param(st, i, v, PG_TEXT_OID);
}

static void pg_bind_null(struct db_stmt *st, int i)
{
    set_param(st, i, NULL, 0);
}

/* Runs the statement with its bindings; the result waits in s->res. */
static int run(struct stmt_pg *s, const char *what, struct tide_err *err)
{
    struct db_pg *d = pg(s->base.db);
    pthread_mutex_lock(&d->mu);
    int rc = 0;
    if (d->lost) {
        rc = lost_error(err, what);
        goto out;
    }
    if (s->oom) {
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        goto out;
    }
    const char *const *values = (const char *const *)s->values;
    if (s->keep && s->prepared && s->session != d->session)
        s->prepared = false; /* made on a session that is gone */
    if (s->keep && !s->prepared) {
        PGresult *p = PQprepare(d->conn, s->name, s->sql, s->nparams, s->types);
        if (PQresultStatus(p) != PGRES_COMMAND_OK)
            rc = fail(d, p, err, what);
        PQclear(p);
        if (rc)
            goto out;
        s->prepared = true;
        s->session = d->session;
    }
    s->res = s->keep ? PQexecPrepared(d->conn, s->name, s->nparams, values, NULL, NULL, 0)
                     : PQexecParams(d->conn, s->sql, s->nparams, s->types, values, NULL, NULL, 0);
    ExecStatusType status = PQresultStatus(s->res);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
        const char *n = PQcmdTuples(s->res);
        s->changes = n[0] ? strtoll(n, NULL, 10) : 0;
    } else {
        rc = fail(d, s->res, err, what);
        PQclear(s->res);
        s->res = NULL;
    }
out:
    pthread_mutex_unlock(&d->mu);
    return rc;
}

static int pg_step(struct db_stmt *st, const char *what, struct tide_err *err)
{
    struct stmt_pg *s = pst(st);
    if (!s->res) {
        int rc = run(s, what, err);
        if (rc)
            return rc;
        s->row = -1;
    }
    s->row++;
    return s->row < PQntuples(s->res) ? DB_ROW : DB_DONE;
}

static bool pg_column_is_null(struct db_stmt *st, int i)
{
    struct stmt_pg *s = pst(st);
    return !s->res || s->row < 0 || s->row >= PQntuples(s->res) || i >= PQnfields(s->res) ||
           PQgetisnull(s->res, s->row, i);
}

static int64_t pg_column_int64(struct db_stmt *st, int i)
{
    if (pg_column_is_null(st, i))
        return 0;
    return strtoll(PQgetvalue(pst(st)->res, pst(st)->row, i), NULL, 10);
}

static const char *pg_column_text(struct db_stmt *st, int i)
{
    if (pg_column_is_null(st, i))
        return NULL;
    return PQgetvalue(pst(st)->res, pst(st)->row, i);
}

static int64_t pg_changes(struct db_stmt *st)
{
    return pst(st)->changes;
}

static void pg_reset(struct db_stmt *st)
{
    struct stmt_pg *s = pst(st);
    PQclear(s->res);
    s->res = NULL;
    s->row = -1;
    s->changes = 0;
    s->oom = false;
    for (int i = 0; i < s->nparams; i++) {
        free(s->values[i]);
        s->values[i] = NULL;
        s->types[i] = 0;
    }
}

static void pg_finalize(struct db_stmt *st)
{
    struct stmt_pg *s = pst(st);
    struct db_pg *d = pg(st->db);
    pg_reset(st);
    if (s->prepared) {
        char sql[48];
        snprintf(sql, sizeof sql, "DEALLOCATE %s", s->name);
        pthread_mutex_lock(&d->mu);
        if (!d->lost && s->session == d->session)
            PQclear(PQexec(d->conn, sql));
        pthread_mutex_unlock(&d->mu);
    }
    free(s->values);
    free(s->types);
    free(s->sql);
    free(s);
}

static bool pg_lost(struct db *db)
{
    struct db_pg *d = pg(db);
    pthread_mutex_lock(&d->mu);
    bool lost = d->lost || PQstatus(d->conn) == CONNECTION_BAD;
    pthread_mutex_unlock(&d->mu);
    return lost;
}

/* A peer that vanishes (its host's power, a cut cable) sends no reset: on
 * Linux's defaults a TCP session finds out after 2 h 11 min, and all that
 * while a dead leader's session kept the leader lock (every agent then
 * fenced its jobs), and a cut-off leader hung in a query holding the
 * server's lock. Both ends give up on a silent peer within about 11 s
 * instead (5 s idle, then 3 probes 2 s apart; unanswered data 10 s), well
 * under the default node timeout (30 s). */
#define PG_KEEPALIVES                                                                              \
    "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3"
#define PG_USER_TIMEOUT "SET tcp_user_timeout = 10000"

/* What every session of ours starts with. Called with the mutex held. */
static int session_setup(struct db_pg *d, struct tide_err *err)
{
    /* A commit returns once PostgreSQL has flushed it: a job is durable before its 201. */
    PGresult *res =
        PQexec(d->conn, "SET synchronous_commit = on; SET client_min_messages = warning");
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : fail(d, res, err, "set up the session");
    PQclear(res);
    if (rc)
        return rc;
    /* the server's end, best effort: a PostgreSQL before 12 lacks
     * tcp_user_timeout (the keepalives do it alone then); over a Unix
     * socket neither changes anything */
    PQclear(PQexec(d->conn, PG_KEEPALIVES));
    PQclear(PQexec(d->conn, PG_USER_TIMEOUT));
    return 0;
}

/* Connects to url with the client's end of the dead-peer settings; the
 * URL's own values, if it has any, win (they come after ours). */
static PGconn *connect_to(const char *url)
{
    /* (a libpq before 12 refuses tcp_user_timeout: the keepalives alone) */
    bool user_timeout = PQlibVersion() >= 120000;
    const char *keys[] = {"connect_timeout",
                          "keepalives",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "dbname",
                          NULL,
                          NULL};
    const char *values[] = {"5", "1", "5", "2", "3", url, NULL, NULL};
    if (user_timeout) { /* before dbname, as the others: the URL's value wins */
        keys[6] = "dbname", values[6] = url;
        keys[5] = "tcp_user_timeout", values[5] = "10000";
    }
    return PQconnectdbParams(keys, values, 1);
}

static int pg_reconnect(struct db *db, struct tide_err *err)
{
    struct db_pg *d = pg(db);
    pthread_mutex_lock(&d->mu);
    int rc = 0;
    if (!d->lost && PQstatus(d->conn) == CONNECTION_OK) {
        rc = 0;
    } else if (d->pinned) {
        rc = tide_err_set(err, TIDE_EIO, NULL,
                          "database: the connection that held the leader lock was lost and is"
                          " not reopened");
    } else {
        PQreset(d->conn);
        if (PQstatus(d->conn) != CONNECTION_OK) {
            rc = fail(d, NULL, err, "reconnect");
        } else {
            d->lost = false;
            d->session++;
            rc = session_setup(d, err);
        }
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

static void pg_pin(struct db *db)
{
    pthread_mutex_lock(&pg(db)->mu);
    pg(db)->pinned = true;
    pthread_mutex_unlock(&pg(db)->mu);
}

static int64_t pg_last_insert_id(struct db_stmt *st)
{
    (void)st;
    return 0;
}

static const struct db_ops pg_ops = {
    .close = pg_close,
    .exec = pg_exec,
    .prepare = pg_prepare,
    .bind_int64 = pg_bind_int64,
    .bind_text = pg_bind_text,
    .bind_text_take = pg_bind_text_take,
    .bind_null = pg_bind_null,
    .step = pg_step,
    .column_is_null = pg_column_is_null,
    .column_int64 = pg_column_int64,
    .column_text = pg_column_text,
    .changes = pg_changes,
    .reset = pg_reset,
    .finalize = pg_finalize,
    .lost = pg_lost,
    .last_insert_id = pg_last_insert_id,
    .reconnect = pg_reconnect,
    .pin = pg_pin,
};

/* PostgreSQL's notices ("relation already exists, skipping") are not ours to print. */
static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

int db_pg_open(const char *url, const char *shown_url, struct db **out, struct tide_err *err)
{
    *out = NULL;
    struct db_pg *d = calloc(1, sizeof *d);
    if (!d)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    d->base.ops = &pg_ops;
    d->base.dialect = DB_POSTGRES;
    pthread_mutex_init(&d->mu, NULL);
    d->conn = connect_to(url);
    if (!d->conn || PQstatus(d->conn) != CONNECTION_OK) {
        /* libpq's message, on one line */
        char msg[300];
        snprintf(msg, sizeof msg, "%s", d->conn ? PQerrorMessage(d->conn) : "out of memory");
        for (char *p = msg; *p; p++)
            if (*p == '\n' || *p == '\t')
                *p = ' ';
        int len = (int)strlen(msg);
        while (len > 0 && msg[len - 1] == ' ')
            len--;
        int rc = tide_err_set(err, TIDE_EIO, "store", "cannot connect to the database %s: %.*s",
                              shown_url, len, msg);
        pg_close(&d->base);
        return rc;
    }
    PQsetNoticeProcessor(d->conn, quiet, NULL);
    pthread_mutex_lock(&d->mu);
    int rc = session_setup(d, err);
    pthread_mutex_unlock(&d->mu);
    if (rc) {
        pg_close(&d->base);
        return rc;
    }
    *out = &d->base;
    return 0;
}
