/*
 * Per-node wake-ups for the agents' long-poll (agent_wake.h), without the
 * HTTP side: each node has a counter of decisions, the count its last
 * heartbeat reply or wait answer carried, and a condition variable of its
 * own, so that a decision for node N wakes only the waits parked for N
 * (one broadcast for all woke every agent's wait per decision, and each
 * took the server's lock only to park again).
 * A mutex of the caller's guards it all; every function needs it held.
 */
#ifndef TIDE_SERVER_WAKE_SLOTS_H
#define TIDE_SERVER_WAKE_SLOTS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The highest node id that gets a slot (ids come from the store, dense). */
#define WAKE_SLOTS_MAX_NODE_ID ((int64_t)1 << 30)

struct wake_slot;

struct wake_slots {
    struct wake_slot **slots; /* by node id; NULL: none yet. A slot never moves. */
    size_t nslots;
    /* where a wait without a slot (an id out of range, out of memory)
     * sleeps to its deadline, so that its agent does not ask again at once */
    pthread_cond_t slotless;
    int slotless_parked;
};

/* 0, or an error of pthread_cond_init (w is then unusable). */
int wake_slots_init(struct wake_slots *w);
/* Frees every slot; no wait may be parked. */
void wake_slots_release(struct wake_slots *w);

/* Something was decided for node_id: its counter moves and its parked
 * waits (only those) are woken. Out of memory or an id out of range only
 * loses the wake (the heartbeat still comes). */
void wake_slots_decided(struct wake_slots *w, int64_t node_id);
/* The calling thread is building a reply for node_id that will carry
 * everything decided for it (a heartbeat's): its own decisions for the
 * node move the counter but wake no wait, until its
 * wake_slots_delivered(node_id) ends the hold. Other threads' decisions
 * wake as ever, so a hold left behind delays nothing of theirs. */
void wake_slots_hold(struct wake_slots *w, int64_t node_id);
/* Everything decided for node_id so far is being sent to its agent (and
 * the node's hold, if any, ends). Returns the node's count of decisions
 * so far (0 without a slot): the reply's "decision" (docs/api.md). */
uint64_t wake_slots_delivered(struct wake_slots *w, int64_t node_id);
/* Whether something was decided for node_id that was not delivered. */
bool wake_slots_undelivered(struct wake_slots *w, int64_t node_id);
/* Wakes every parked wait of every node (shutdown: they see *stop). */
void wake_slots_wake_all(struct wake_slots *w);

/* Parks (mu released meanwhile) until node_id has something undelivered,
 * *stop is set and the wait woken (wake_slots_wake_all), or the
 * CLOCK_MONOTONIC deadline passes. Returns wake_slots_undelivered's
 * answer (false for an id that gets no slot: out of range, out of memory;
 * such a wait sleeps to its deadline). */
bool wake_slots_wait(struct wake_slots *w, pthread_mutex_t *mu, int64_t node_id,
                     const struct timespec *deadline, const volatile int *stop);

/* For tests: the waits parked for node_id now, and how many
 * times one of its parked waits was woken (by a decision for the node or
 * wake_slots_wake_all; a timeout is no wake-up). */
int wake_slots_parked(const struct wake_slots *w, int64_t node_id);
uint64_t wake_slots_wakeups(const struct wake_slots *w, int64_t node_id);

#endif
