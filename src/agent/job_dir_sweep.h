/*
 * How long a job's directory on the agent (WORK/jobs/<id>, TIDE_WORK_DIR,
 * the cwd of a job that names no workdir) is kept: keep_s after the last
 * task of the job on this node was forgotten, then it is removed with what
 * the job left in it, so that scratch files do not fill the node's disk.
 *
 * A thread of its own sweeps WORK/jobs every JOB_DIR_SWEEP_EVERY_S (sooner
 * for a short keep_s): a directory that no task holds and that has not
 * changed for keep_s is renamed to ".trash-<id>" and that tree removed
 * (remove_tree.h: no link followed, no mount entered). The rename makes a
 * task of the job that starts meanwhile get a new directory, and a
 * removal cut short by a crash is finished by the next run's first sweep.
 * A tree that cannot be removed whole (a mount point in it, an immutable
 * file) is renamed ".kept-<id>-<time>", logged once, and left alone. The
 * thread runs at the lowest CPU priority (nice 19): many files take time.
 * Before its first removal it leaves WORK/jobs/.ran, so a restart of the
 * agent still looks for what an earlier run's tasks left behind
 * (agent_work_ran_tasks) once their directories are gone.
 *
 * Directories of an earlier run that no task holds count from their last
 * change: those older than keep_s go at the first sweep.
 */
#ifndef TIDE_AGENT_JOB_DIR_SWEEP_H
#define TIDE_AGENT_JOB_DIR_SWEEP_H

#include <stdint.h>

/* The longest time between two sweeps. */
#define JOB_DIR_SWEEP_EVERY_S 60
/* The default of tide agent --job-dir-keep-s: a day. */
#define JOB_DIR_KEEP_S_DEFAULT 86400

struct job_dir_sweep;

/* Starts sweeping jobs_dir (an existing directory) for directories kept
 * keep_s (>= 0) seconds. NULL with errno when it cannot (no such
 * directory, no memory, no thread). */
struct job_dir_sweep *job_dir_sweep_create(const char *jobs_dir, int keep_s);

/* Stops the thread (a removal under way ends first) and frees s; NULL is
 * fine. */
void job_dir_sweep_destroy(struct job_dir_sweep *s);

/* A task of job_id is about to use its directory: it is not removed until
 * as many releases. Call before the directory is made. NULL s is fine. */
void job_dir_sweep_hold(struct job_dir_sweep *s, int64_t job_id);

/* A task of job_id is done with its directory: the directory's time is set
 * to now, so that keep_s counts from here, and one hold ends. NULL s is
 * fine. */
void job_dir_sweep_release(struct job_dir_sweep *s, int64_t job_id);

#endif
