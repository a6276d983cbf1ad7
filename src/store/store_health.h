/*
 * GPU health in the store (core/gpu_health.h): per GPU, whether it
 * is faulty, its last fault and the agent's fault count the server has
 * seen with the agent run it counts in, so faults survive a server restart
 * and an operator's clear is not undone by an agent reporting the same old
 * fault again.
 */
#ifndef TIDE_STORE_HEALTH_H
#define TIDE_STORE_HEALTH_H

#include "core/cluster.h"
#include "store/store.h"

/* Replaces node's rows with its GPUs' health (those with a fault seen). */
int store_gpu_faults_save(struct store *s, const struct node *node, struct tide_err *err);

/* Sets the health of the GPUs of c's nodes from the table. */
int store_gpu_faults_load(struct store *s, struct cluster *c, struct tide_err *err);

#endif
