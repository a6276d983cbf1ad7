/*
 * Leadership of this server (docs/ha.md). Several servers may share one
 * store; the one the store grants the leader lock (store/store_lead.h)
 * leads, the others follow: their HTTP listener answers GET /healthz with
 * who leads and everything else with 503 "not the leader" naming the
 * leader, while they try for the lock every LEAD_TRY_MS. A SQLite store
 * always grants at once, so a lone server leads as soon as it has started.
 */
#ifndef TIDE_SERVER_LEAD_H
#define TIDE_SERVER_LEAD_H

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/tide_err.h"
#include "store/store_lead.h"

#define LEAD_TRY_MS 250

enum lead_role {
    LEAD_FOLLOWER, /* another server leads (or nobody yet) */
    LEAD_STARTING, /* granted: loading state as a restart does */
    LEAD_LEADER,
};

struct server_lead {
    pthread_mutex_t mu;
    enum lead_role role;
    int64_t epoch;                         /* ours once granted, else the leader's (0: unknown) */
    char url[STORE_LEADER_URL_MAX];        /* the URL we advertise */
    char leader_url[STORE_LEADER_URL_MAX]; /* the leader's; "" while unknown */
};

struct server;
struct api_reply;

/* A follower advertising url (http:// or https://, shorter than
 * STORE_LEADER_URL_MAX; the caller has checked). */
void lead_init(struct server_lead *l, const char *url);
void lead_release(struct server_lead *l);

/* Checks an --advertise-url value: 0, or TIDE_EINVAL naming the flag. */
int lead_check_url(const char *url, struct tide_err *err);

/* Tries for the leadership every LEAD_TRY_MS, noting who leads meanwhile,
 * until the store grants it (0: the role is LEAD_STARTING, with our new
 * epoch) or *stop is set (1). A store that cannot be reached is logged and
 * tried again (it reopens a follower's connection). Only the calling
 * thread uses the store meanwhile. */
int lead_acquire(struct server *srv, volatile sig_atomic_t *stop);

/* Once state is loaded: from now on requests are served. */
void lead_set_leader(struct server_lead *l);

/* Our epoch while leading; 0 otherwise. */
int64_t lead_epoch(struct server_lead *l);

/* For the HTTP front: when this server does not lead, fills reply (GET
 * /healthz: 200 with the role and the leader; anything else: 503 with
 * {"error":"not the leader","leader":URL}), copies the leader's URL into
 * leader ("" when unknown: no X-Tide-Leader header) and returns true. */
bool lead_answer_unless_leader(struct server_lead *l, const char *method, const char *path,
                               struct api_reply *reply, char *leader, size_t n);

/* Every LEAD_CHECK_MS, while leading: whether this server must stop at once
 * because it no longer leads (its store connection, and with it the lock,
 * is lost; or the store names a newer epoch). Takes the server lock; on
 * true, why says what happened. */
#define LEAD_CHECK_MS 200
bool lead_deposed(struct server *srv, char *why, size_t n);

/* Adds "role", "epoch" and "leader" to a leader's /healthz body. */
void lead_health_fields(struct server_lead *l, json_t *body);

#endif
