/*
 * A provider creates and deletes the machines of an elastic pool. Each one
 * is a struct of function pointers (provider_local.c: `tide agent`
 * processes on this machine; provider_exec.c: a user program, see
 * docs/providers.md), so a new one is a new file.
 *
 * Calls are made by the pool loop without the server's lock. Those of a
 * provider whose ops say `blocking` (an exec provider may take minutes) run
 * on worker threads, several at once (for different nodes, of one pool or
 * of several), so its create, destroy and list must be safe to call
 * concurrently; the others are made one after another on the pool thread.
 * A node created by a provider must start `tide agent --name NAME --pool
 * POOL` with the join token; the server links it to the node record NAME
 * when it registers.
 */
#ifndef TIDE_PROVIDER_H
#define TIDE_PROVIDER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/tide_err.h"
#include "core/pool.h"

struct provider_env {
    char server_url[1024]; /* one URL, or several comma-separated (docs/ha.md) */
    char join_token_path[600];
    char data_dir[512];
    /* The server's stop flag: once it is set, a blocking call in progress
     * ends soon with an error (the exec provider stops its program). May be
     * NULL. */
    volatile int *stopping;
};

/* A provider's id of a node, NUL included: a cloud's full resource path
 * (Azure's run past 128 bytes). A longer one is refused, never cut. */
#define PROVIDER_ID_MAX 512

/* One node as a provider knows it: tide's name and the provider's own id. */
struct provider_node {
    char name[TIDE_NAME_MAX];
    char id[PROVIDER_ID_MAX]; /* filled by create; "" when the provider gives none */
    int interrupted; /* list: the provider reports it reclaimed (spot) */
};

struct provider;

struct provider_ops {
    const char *name;
    /* Calls may take long (a cloud CLI): the pool loop makes them on worker
     * threads, concurrently. */
    bool blocking;
    /* Creates count nodes of pool to register as nodes[i].name; fills
     * nodes[i].id. 0 or a negative code with err saying why. */
    int (*create)(struct provider *p, const struct pool *pool, struct provider_node *nodes,
                  int count, struct tide_err *err);
    /* Deletes one node. */
    int (*destroy)(struct provider *p, const struct pool *pool, const struct provider_node *node,
                   struct tide_err *err);
    /* Lists the nodes the provider holds for pool into nodes (at most max;
     * name, id, interrupted). Returns how many or a negative code with err.
     * Called at start to reconcile, and regularly for spot pools. May be
     * NULL (the local provider starts nothing that outlives the server). */
    int (*list)(struct provider *p, const struct pool *pool, struct provider_node *nodes, int max,
                struct tide_err *err);
    /* Reaps what it started; called every loop, on the pool thread. May be
     * NULL. */
    void (*poll)(struct provider *p);
    /* Stops what it started at server shutdown (local) and frees state;
     * called once every call has returned. */
    void (*shutdown)(struct provider *p);
};

struct provider {
    const struct provider_ops *ops;
    struct provider_env env;
    void *state;
};

extern const struct provider_ops provider_local_ops;
extern const struct provider_ops provider_exec_ops;

/* The ops called name ("local", "exec"), or NULL. */
const struct provider_ops *provider_by_name(const char *name);

/* The --fake-gpus spec of a pool's node shape: "2xH200:144384MiB". */
void provider_fake_gpu_spec(const struct pool *pool, char *buf, size_t size);

#endif
