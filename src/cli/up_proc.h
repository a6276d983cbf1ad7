/*
 * The processes `tide up` supervises: start this same binary in another
 * role with its output in a log file, notice when one exits, and stop a set
 * of them (SIGTERM, then SIGKILL after a grace period). The caller blocks
 * SIGCHLD, SIGINT and SIGTERM and waits for them with sigtimedwait; children
 * start with the signal mask the caller had before (saved in up_proc_init).
 */
#ifndef TIDE_CLI_UP_PROC_H
#define TIDE_CLI_UP_PROC_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/tide_err.h"

struct up_child {
    char name[64];           /* "server", "local-1" */
    char log_path[PATH_MAX]; /* where its stdout and stderr go */
    pid_t pid;               /* 0 before start */
    int running;
    int status; /* wait status once it exited */
};

/* Blocks SIGCHLD, SIGINT and SIGTERM (so they queue for sigtimedwait) after
 * making sure none of them is ignored, and remembers the previous mask for
 * children. Fills set with the three. Returns 0 or TIDE_EIO. */
int up_proc_init(sigset_t *set, struct tide_err *err);

/* Starts /proc/self/exe with argv (argv[0] is the role name shown in ps;
 * NULL-terminated) in its own process group, stdin from /dev/null, stdout
 * and stderr to log_path (truncated), and SIGTERM if `tide up` dies. */
int up_child_start(struct up_child *ch, const char *name, char *const argv[],
                   const char *log_path, struct tide_err *err);

/* Reaps ch if it has exited, without blocking. Returns 1 when it is no
 * longer running (now or before), 0 while it runs. */
int up_child_reap(struct up_child *ch);

/* Writes how ch ended: "exited with status 1", "was killed by signal 9". */
void up_child_describe_exit(const struct up_child *ch, char *buf, size_t size);

/* SIGTERM to every running child in chs, waits up to grace_ms for all of
 * them, then SIGKILL to the rest and reaps them. Returns how many needed
 * SIGKILL. */
int up_children_stop(struct up_child *chs, size_t n, int64_t grace_ms);

#endif
