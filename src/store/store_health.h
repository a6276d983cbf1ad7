/*
 * GPU health in the store (core/gpu_health.h): per GPU, whether it
 * is faulty, its last fault and the agent's fault count the server has
 * seen with the agent run it counts in, so faults survive a server restart
 * and an operator's clear is not undone by an agent reporting the same old
 * fault again; per node, the faults counted towards node_fault_limit.
 */
#ifndef TIDE_STORE_HEALTH_H
#define TIDE_STORE_HEALTH_H

#include "core/cluster.h"
#include "store/store.h"

/* Replaces node's rows with its GPUs' health (those with a fault seen)
 * and its fault count towards node_fault_limit (with the window's start
 * and whether it failed the node). */
int store_gpu_faults_save(struct store *s, const struct node *node, struct tide_err *err);

/* Removes what node_id's rows say: its node is deleted, and an agent
 * that registers the name again brings the same id back, healthy. */
int store_gpu_faults_forget(struct store *s, int64_t node_id, struct tide_err *err);

/* Sets the health of the GPUs of c's nodes, and their fault counts, from
 * the tables. */
int store_gpu_faults_load(struct store *s, struct cluster *c, struct tide_err *err);

#endif
