/*
 * Waiting for jobs to finish (`tide submit --wait`): poll each job until it
 * reaches a final state, reporting state changes on stderr as they happen.
 */
#ifndef TIDE_CLI_WAIT_H
#define TIDE_CLI_WAIT_H

#include <jansson.h>
#include <stddef.h>

#include "cli/client.h"

/* True for the states a job never leaves: succeeded, failed, cancelled,
 * timeout. */
int cli_state_is_final(const char *state);

/* Polls the n jobs in ids about once a second until every one is final.
 * On success *final is a new array of their last job objects (in ids order)
 * and the return is how many did not succeed (0 when all did). On a request
 * error returns its negative code with err set and *final NULL. */
int cli_wait_jobs(struct cli_client *c, const long long *ids, size_t n, json_t **final,
                  struct tide_err *err);

/* Exit statuses of `tide submit --wait` for a job that ended without an
 * exit code of its own. */
#define CLI_EXIT_TIMEOUT 124   /* killed at max_runtime, as timeout(1) */
#define CLI_EXIT_CANCELLED 125 /* cancelled */
#define CLI_EXIT_NO_CODE 1     /* failed with no exit code or signal (e.g. a dependency failed) */

/* The exit status `tide submit --wait` gives for a finished job: 0 when it
 * succeeded, its exit code when it has one (1..255), 128 + the signal that
 * killed it, CLI_EXIT_TIMEOUT, CLI_EXIT_CANCELLED, else CLI_EXIT_NO_CODE. */
int cli_job_exit_status(json_t *job);

#endif
