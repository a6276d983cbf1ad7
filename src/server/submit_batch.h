/*
 * Group commit for POST /v1/jobs. Every accepted job is durable before its
 * 201, and each commit is an fsync: one commit per request caps the submit
 * rate at the disk's fsync rate. Here
 * the HTTP threads queue their checked submissions, and whichever finds
 * nobody committing commits everything queued in one transaction, answers
 * the others, and hands what queued meanwhile to its first waiter. No
 * thread of its own: a lone client commits in its own thread, with no
 * hand-off, and a waiter is woken once, when its answer is ready (or the
 * next batch is its to commit). Nothing waits on purpose: a batch is what
 * arrived while the previous one was being committed.
 */
#ifndef TIDE_SERVER_SUBMIT_BATCH_H
#define TIDE_SERVER_SUBMIT_BATCH_H

#include <jansson.h>

#include "common/json_write.h"
#include "server/server.h"

/* One submission: a checked spec (its array member count included) and
 * what becomes of it. */
struct submit_work {
    const struct api_request *req; /* for the token: dependencies must be visible to it */
    json_t *spec;                  /* borrowed */
    struct job job;                /* from the spec */
    /* The client's Idempotency-Key (NULL: none) and the request's hash: a
     * key seen before answers with the jobs it made, nothing new. */
    const char *idempotency_key;
    char request_hash[65];
    /* Results: */
    int rc;              /* 0, or a TIDE_E* code with err */
    struct tide_err err;
    json_t *out;         /* the stored job (or {"jobs": [...]} for arrays); caller's reference */
    char *out_text;      /* or the same as JSON text (a line), when just inserted; caller frees */
    json_t *replay_ids;          /* the jobs an earlier use of the key made */
    struct submit_work *replay_of; /* an earlier work of this batch with the key */
    /* Made on the HTTP thread before the lock is taken: the spec text of
     * each of its rows (work_count of them) for the insert, which takes
     * them; unless ids_only, a copy of each for the answer; an array's
     * members' names (MEMBER_NAME_SIZE each). */
    char **specs, **texts;
    char *names;
    /* The batch's: */
    int64_t *ids; /* the job ids inserted for it, nids of them */
    int nids;
    struct json_buf rows; /* those jobs as stored, the answer's text (empty when ids_only) */
    struct submit_work *next;
    pthread_cond_t *wake; /* its waiter's, signalled when done or its turn to commit */
    bool done;
    bool ids_only; /* out is {"id": N} (and "ids" for an array), not the stored job */
};

/* Sets up the queue (srv->submits). Returns 0 or TIDE_ENOMEM with err. */
int submit_batch_start(struct server *srv, struct tide_err *err);
/* Frees the queue (no-op if not set up). Call once no HTTP thread can
 * submit any more: then nothing is queued and nobody is committing. */
void submit_batch_stop(struct server *srv);

/* Queues w and waits until it is committed (or refused), committing its
 * batch itself when nobody else is; runs it at once in this thread when no
 * queue is set up. Fills w's results. */
void submit_batch_run(struct server *srv, struct submit_work *w);
/* The same for n works at once: they are committed in one transaction (a
 * failed write fails them all; a refused one fails alone). */
void submit_batch_run_many(struct server *srv, struct submit_work **works, size_t n);

#endif
