/*
 * Job dependencies (depends_on): a held job is released when every job it
 * depends on has succeeded, and fails, with the reason, as soon as one of
 * them ends any other way.
 */
#ifndef TIDE_DEPS_H
#define TIDE_DEPS_H

#include "core/action.h"
#include "core/cluster.h"

/* The final state of a job that is no longer in the cluster, or -1 when no
 * such job is known. Supplied by the shell (the store, the simulator). */
typedef int (*deps_final_state_fn)(int64_t job_id, void *ctx);

/* Releases or fails held jobs. Appends ACTION_FINISH for jobs that fail (and
 * removes them). Returns the number of jobs released. */
int deps_resolve(struct cluster *c, deps_final_state_fn final_state_of, void *ctx,
                 struct action_list *out);

#endif
