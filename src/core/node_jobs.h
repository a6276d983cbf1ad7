/*
 * Which jobs have a task on each node: for every node id, the ids of the
 * jobs placed there (a job's first node and each part of a gang job). The
 * cluster keeps one current through cluster_assign, cluster_assign_part,
 * cluster_unassign and cluster_add_job, so that an agent's messages
 * (reconcile.h, the server's wait answers) cost O(jobs on its node), not
 * O(jobs in the cluster). Plain data, no order within a node's list.
 */
#ifndef TIDE_NODE_JOBS_H
#define TIDE_NODE_JOBS_H

#include <stddef.h>
#include <stdint.h>

struct node_jobs_list {
    int64_t node_id;
    int64_t *job_ids; /* unordered */
    uint32_t n, cap;
};

struct node_jobs_slot {
    int64_t node_id;
    uint32_t pos; /* position in lists + 1; 0: empty */
};

struct node_jobs {
    struct node_jobs_list *lists; /* one per node ever given a job; never shrinks */
    size_t nlists, lists_cap;
    struct node_jobs_slot *slots; /* open addressing by node id */
    size_t cap;                   /* slots, a power of two; 0: none yet */
};

void node_jobs_init(struct node_jobs *ix);
void node_jobs_release(struct node_jobs *ix);

/* Records that job_id has a task on node_id. O(1): the caller adds a job
 * to a node once (a second add lists it twice). Returns 0, or -1 when out
 * of memory (then the index misses it). */
int node_jobs_add(struct node_jobs *ix, int64_t node_id, int64_t job_id);

/* Empties every node's list, keeping the memory (to fill it again). */
void node_jobs_clear(struct node_jobs *ix);

/* Forgets job_id on node_id; nothing when it was not there. */
void node_jobs_remove(struct node_jobs *ix, int64_t node_id, int64_t job_id);

/* The ids on node_id (valid until the next add or remove), count in *n;
 * NULL and 0 when none. */
const int64_t *node_jobs_of(const struct node_jobs *ix, int64_t node_id, size_t *n);

#endif
