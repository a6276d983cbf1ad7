/*
 * How long a job's directory on the agent (WORK/jobs/<id>, TIDE_WORK_DIR,
 * the cwd of a job that names no workdir) is kept: keep_s after the last
 * task of the job on this node was done with it (its report delivered),
 * then it is removed with what the job left in it, so that scratch files
 * do not fill the node's disk.
 *
 * A thread of its own (at nice 19: many files take time) looks at
 * WORK/jobs every JOB_DIR_SWEEP_EVERY_S, or every quarter of a shorter
 * keep_s, and hands the agent's loop the job ids whose directories have
 * not changed for keep_s. The loop, which owns the tasks, renames those
 * that no task of its uses to ".trash-<id>" (job_dir_sweep_retire_due:
 * it never waits for the thread), and the thread removes the trash
 * (remove_tree.h: no link followed, no mount entered). A task of the job
 * that starts later gets a new directory, and a removal cut short (a
 * crash, the agent stopping) is finished by the next look. A tree that
 * cannot be removed whole (a mount point in it, an immutable file, more
 * than REMOVE_TREE_MAX_DEPTH levels) is renamed ".kept-<id>-<time>",
 * logged, and left alone; other failures are tried again at the next look.
 * Before its first rename the loop leaves WORK/jobs/.ran, so that a
 * restart still looks for what an earlier run's tasks left behind
 * (agent_work_ran_tasks) once their directories are gone.
 *
 * A directory an earlier run of the agent left cannot be told from one
 * whose task died with that run, so those already past their time are
 * kept keep_s once more, counted from the first look.
 */
#ifndef TIDE_AGENT_JOB_DIR_SWEEP_H
#define TIDE_AGENT_JOB_DIR_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

/* The longest time between two looks at WORK/jobs. */
#define JOB_DIR_SWEEP_EVERY_S 60
/* The default of tide agent --job-dir-keep-s: a day. */
#define JOB_DIR_KEEP_S_DEFAULT 86400

struct job_dir_sweep;

/* Starts looking at jobs_dir (an existing directory) for directories kept
 * keep_s (>= 0) seconds. NULL with errno when it cannot: ENOSYS where
 * mount points cannot be told (remove_tree.h), or no such directory, no
 * memory, no thread. */
struct job_dir_sweep *job_dir_sweep_create(const char *jobs_dir, int keep_s);

/* Stops the thread (a removal under way stops at its next entry) and
 * frees s; NULL is fine. */
void job_dir_sweep_destroy(struct job_dir_sweep *s);

/* For the agent's loop, as often as it likes (nothing to do costs an
 * atomic read): renames to trash the directories the thread found due,
 * except those of jobs for which in_use(job_id, arg) is true and those
 * changed since. Never waits for the thread. NULL s is fine. */
void job_dir_sweep_retire_due(struct job_dir_sweep *s, bool (*in_use)(int64_t job_id, void *arg),
                              void *arg);

/* A task of job_id is done with its directory: its time is set to now, so
 * that keep_s counts from here. NULL s is fine. */
void job_dir_sweep_touch(struct job_dir_sweep *s, int64_t job_id);

#endif
