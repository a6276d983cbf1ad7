/*
 * The event log: what happened to jobs, nodes, pools and budgets, one row
 * per transition, with the node name, pool and project copied into the row
 * so that filters are index lookups and a deleted node's history keeps its
 * name. Writes go through the main connection inside the caller's
 * transaction; listing reads through the store's read-only connection and
 * needs no server lock.
 */
#ifndef TIDE_STORE_EVENTS_H
#define TIDE_STORE_EVENTS_H

#include <stdbool.h>

#include "store/store.h"

#define EVENT_KINDS_MAX 16

/* Which events to list. Zero / NULL fields match everything. */
struct event_filter {
    int64_t since_id;   /* only ids above this (the follow cursor) */
    int64_t job_id;
    const char *node;   /* node name */
    const char *pool;
    const char *project;
    const char *kinds[EVENT_KINDS_MAX]; /* any of: an exact kind, or a prefix ending in '*' */
    int nkinds;
    int64_t from_ms;    /* time_ms >= from_ms */
    int64_t to_ms;      /* time_ms < to_ms; 0: no bound */
    int limit;          /* at most this many, the oldest first; <= 0: 1000 */
    int tail;           /* > 0: the newest `tail` instead (still returned oldest first) */
    json_t *projects;   /* a token's allowed projects; NULL: every project and
                           project-less events (nodes, pools) */
};

/* One job event of store_events_add_many: about a job not on a node. */
struct store_new_event {
    int64_t job_id;
    const char *project;
    const char *message;
};

/* Adds n events of kind at now_ms in the open transaction, several rows a
 * statement: as store_event_add_in(s, now_ms, kind, job_id, 0, NULL,
 * project, message) for each, in order. */
int store_events_add_many(struct store *s, int64_t now_ms, const char *kind,
                          const struct store_new_event *events, size_t n, struct tide_err *err);

/* store_event_add with the pool and project given (NULL: taken from the
 * node's and the job's rows, as store_event_add does), for events about a
 * pool or a project without a node or job (budget alerts, provider
 * failures). */
int store_event_add_in(struct store *s, int64_t now_ms, const char *kind, int64_t job_id,
                       int64_t node_id, const char *pool, const char *project,
                       const char *message, struct tide_err *err);

/* The events f matches, oldest first, as a new JSON array of
 * {"id", "time", "kind", "job_id", "node", "pool", "project", "message"};
 * *more says whether more matched than were returned (newer ones past the
 * limit, or older ones before the tail). Reads the committed state without
 * the writer's lock. */
int store_events_query(struct store *s, const struct event_filter *f, json_t **events,
                       bool *more, struct tide_err *err);

#endif
