/*
 * Spare task logs: a drained log, emptied, waits in WORK/logs under a spare
 * name to become a later task's log, instead of one file removed per job
 * and one made per start. On ext4 without a journal, making a file looks
 * past every inode freed in the last 30 s (a disk block read each), so at a
 * hundred jobs a second each start paid for the last few thousand removals;
 * so did the server's files on the same disk.
 * A spare goes only to a later task of the same owner: if a process of the
 * earlier task still held the file open, it could only write into its own
 * user's log. Thread-safe.
 */
#ifndef TIDE_AGENT_LOG_SPARES_H
#define TIDE_AGENT_LOG_SPARES_H

#include <stdbool.h>
#include <sys/types.h>

/* Most spares kept per agent; a drained log beyond them is removed. */
#define LOG_SPARES_MAX 64

/* Renames a spare owned by uid, kept in path's directory, to path (which
 * must not exist). Returns true when path is now that spare (empty, mode
 * 0600); false when there was none, and the caller makes a new file. */
bool log_spares_take(const char *path, uid_t uid);

/* Empties the log at path and keeps it as a spare in its directory when
 * there is room; removes it otherwise. Call only once the server holds the
 * whole log and no process of its task is left. Spares are kept for one
 * directory at a time: a put in another one forgets the first's. Returns 0
 * or -errno (the file may then still be at path). */
int log_spares_put(const char *path);

/* Forgets every spare (the files stay, and are written over by later
 * spares of the same slot). For tests. */
void log_spares_forget(void);

/* Removes the spares an earlier run left in logs_dir and forgets the
 * process's: the agent's start. Returns how many files went, or -errno
 * when the directory cannot be read (a missing one holds none). */
int log_spares_clear(const char *logs_dir);

#endif
