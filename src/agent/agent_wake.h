/*
 * The agent's side of push (docs/api.md "Agent protocol"): a thread that
 * keeps one long-poll (POST /v1/agent/wait) parked at the server and, when
 * the server says there is something for this node, makes the main loop
 * heartbeat at once through a pipe. The answer may carry the node's
 * starts and stops, which it hands to the main loop to act on at once
 * (agent_wake_take); the heartbeat that follows reports them and carries
 * the rest (acks, logs), so fencing stays where it was. Against a server without /v1/agent/wait it gives up and
 * the agent heartbeats on its interval as before. The same pipe carries
 * SIGCHLD, so a task's exit wakes the loop to reap and report it at once.
 */
#ifndef TIDE_AGENT_WAKE_H
#define TIDE_AGENT_WAKE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Most extra descriptors agent_wake_wait watches; more are not watched. */
#define AGENT_WAKE_MAX_FDS 1024

struct agent_servers;

struct agent_wake {
    int fds[2];        /* the thread writes a byte to fds[1] per wake */
    pthread_mutex_t mu; /* guards token, wait_ms and the answer */
    struct agent_servers *servers; /* where the waits go (the current leader) */
    char token[128];    /* the node token; empty while unregistered */
    int wait_ms;        /* how long the server may hold each wait */
    char *answer;       /* the last answer that carried actions, not yet taken */
    char answer_token[128]; /* the token that answer was for */
    bool started;
    pthread_t thread;
    pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled on stop and when done */
    int stop;            /* set by agent_wake_stop (atomic): the thread ends */
    bool done;           /* the thread has closed its connection and ends */
};

/* Opens the pipe and starts the thread; returns the process's
 * one wake, which lives until exit, or NULL when it could not start (the
 * agent then only polls; the functions below accept NULL). */
struct agent_wake *agent_wake_start(struct agent_servers *servers);
/* Stops the thread before the agent exits: its wait under way is
 * abandoned (a signal cuts it short) and its kept connection closed, so
 * nothing of it runs while the agent frees the server list and (with an
 * https:// server) libcurl's TLS library cleans up at exit. Waits for that up to 3 s. */
void agent_wake_stop(struct agent_wake *w);
/* Gives the thread the node token (after registering) and how long a wait
 * may be held; an empty token pauses it. */
void agent_wake_set(struct agent_wake *w, const char *token, int wait_ms);
/* The last wait answer that carried actions (malloc'd JSON text, the
 * caller frees it) and, in token (n bytes), the node token it was asked
 * with; NULL when none came since the last take. */
char *agent_wake_take(struct agent_wake *w, char *token, size_t n);
/* Whether a child has exited (SIGCHLD) since the last call that said so;
 * clears that. False without the handler (agent_wake_start failed). */
bool agent_wake_child_exited(void);
/* Whether SIGCHLD's handler is in place, so that agent_wake_child_exited
 * false means no child has exited. */
bool agent_wake_watches_children(void);
/* Waits up to ms for a wake (the server's, or a child's exit), or until
 * one of the nfds descriptors in fds is readable (a task's start
 * handshake, task.h); true when a wake came (all pending are taken). */
bool agent_wake_wait(struct agent_wake *w, int64_t ms, const int *fds, size_t nfds);

#endif
