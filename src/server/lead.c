/* Leader election and follower answers (lead.h). */
#include "server/lead.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "server/server.h"

static const char *const role_names[] = {"follower", "starting", "leader"};

void lead_init(struct server_lead *l, const char *url)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
    l->role = LEAD_FOLLOWER;
    snprintf(l->url, sizeof l->url, "%s", url);
}

void lead_release(struct server_lead *l)
{
    pthread_mutex_destroy(&l->mu);
}

int lead_check_url(const char *url, struct tide_err *err)
{
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        return tide_err_set(err, TIDE_EINVAL, "advertise_url",
                            "--advertise-url '%s': must start with http:// or https://", url);
    size_t n = strlen(url);
    if (n >= STORE_LEADER_URL_MAX || n <= 8 || url[n - 1] == '/' || strchr(url, ','))
        return tide_err_set(err, TIDE_EINVAL, "advertise_url",
                            "--advertise-url '%s': must be a URL like https://HOST:PORT, "
                            "shorter than %d characters, without a trailing '/' or a comma",
                            url, STORE_LEADER_URL_MAX);
    return 0;
}

static void nap_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL); /* a signal cuts it short, which stopping wants */
}

int lead_acquire(struct server *srv, volatile sig_atomic_t *stop)
{
    struct server_lead *l = &srv->lead;
    bool said = false, failing = false;
    char last_leader[STORE_LEADER_URL_MAX] = "";
    while (!*stop) {
        int64_t epoch = 0;
        struct tide_err terr;
        tide_err_clear(&terr);
        int rc = store_try_lead(srv->store, l->url, clock_now_ms(), &epoch, &terr);
        if (rc < 0) {
            /* the store reopens a follower's connection at its next try */
            if (!failing)
                log_warn("cannot reach the store (%s); still following, retrying", terr.message);
            failing = true;
            nap_ms(LEAD_TRY_MS);
            continue;
        }
        if (failing)
            log_info("the store answers again");
        failing = false;
        if (rc == 1) {
            pthread_mutex_lock(&l->mu);
            l->role = LEAD_STARTING;
            l->epoch = epoch;
            snprintf(l->leader_url, sizeof l->leader_url, "%s", l->url);
            pthread_mutex_unlock(&l->mu);
            log_info("leading as %s, epoch %" PRId64 "; loading state", l->url, epoch);
            return 0;
        }
        struct store_leader who;
        struct tide_err gerr;
        tide_err_clear(&gerr);
        rc = store_leader_get(srv->store, &who, &gerr);
        if (rc != 0 && rc != TIDE_ENOENT) {
            nap_ms(LEAD_TRY_MS); /* the next try tells more */
            continue;
        }
        pthread_mutex_lock(&l->mu);
        l->epoch = rc == 0 ? who.epoch : 0;
        snprintf(l->leader_url, sizeof l->leader_url, "%s", rc == 0 ? who.url : "");
        pthread_mutex_unlock(&l->mu);
        if (!said || strcmp(last_leader, who.url)) {
            log_info("following %s (epoch %" PRId64 "); trying for the lead every %d ms",
                     rc == 0 && who.url[0] ? who.url : "a leader not yet known", who.epoch,
                     LEAD_TRY_MS);
            snprintf(last_leader, sizeof last_leader, "%s", who.url);
            said = true;
        }
        nap_ms(LEAD_TRY_MS);
    }
    return 1;
}

void lead_set_leader(struct server_lead *l)
{
    pthread_mutex_lock(&l->mu);
    l->role = LEAD_LEADER;
    pthread_mutex_unlock(&l->mu);
}

int64_t lead_epoch(struct server_lead *l)
{
    pthread_mutex_lock(&l->mu);
    int64_t e = l->role == LEAD_LEADER ? l->epoch : 0;
    pthread_mutex_unlock(&l->mu);
    return e;
}

bool lead_answer_unless_leader(struct server_lead *l, const char *method, const char *path,
                               struct api_reply *reply, char *leader, size_t n)
{
    pthread_mutex_lock(&l->mu);
    enum lead_role role = l->role;
    int64_t epoch = l->epoch;
    snprintf(leader, n, "%s", role == LEAD_LEADER ? "" : l->leader_url);
    pthread_mutex_unlock(&l->mu);
    if (role == LEAD_LEADER)
        return false;
    if (!strcmp(path, "/healthz") && !strcmp(method, "GET")) {
        reply->status = 200;
        reply->json = json_pack("{s:s, s:s, s:I}", "status", "ok", "role", role_names[role],
                                "epoch", (json_int_t)epoch);
        if (reply->json && leader[0])
            json_object_set_new(reply->json, "leader", json_string(leader));
        return true;
    }
    reply->status = 503;
    reply->json = json_pack("{s:s}", "error", "not the leader");
    if (reply->json && leader[0])
        json_object_set_new(reply->json, "leader", json_string(leader));
    return true;
}

bool lead_deposed(struct server *srv, char *why, size_t n)
{
    int64_t ours = srv->lead.epoch; /* set before leading, never changed after */
    struct store_leader who;
    struct tide_err err;
    tide_err_clear(&err);
    pthread_mutex_lock(&srv->lock);
    bool lost = store_lead_lost(srv->store);
    int rc = lost ? 0 : store_leader_get(srv->store, &who, &err);
    if (!lost && rc != 0)
        lost = store_lead_lost(srv->store); /* the read may have found out */
    pthread_mutex_unlock(&srv->lock);
    if (lost) {
        snprintf(why, n, "lost the store connection and with it the leadership (epoch %" PRId64 ")",
                 ours);
        return true;
    }
    if (rc == 0 && who.epoch != ours) {
        snprintf(why, n,
                 "deposed: the store names %s the leader with epoch %" PRId64 " (ours was %" PRId64
                 ")",
                 who.url, who.epoch, ours);
        return true;
    }
    return false; /* a failed read alone is not a lost lead: the next check tells */
}

void lead_health_fields(struct server_lead *l, json_t *body)
{
    pthread_mutex_lock(&l->mu);
    json_object_set_new(body, "role", json_string(role_names[l->role]));
    json_object_set_new(body, "epoch", json_integer(l->epoch));
    json_object_set_new(body, "leader", json_string(l->url));
    pthread_mutex_unlock(&l->mu);
}
