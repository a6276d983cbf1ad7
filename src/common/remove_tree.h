/*
 * Removing a directory tree that someone else filled: a job's directory on
 * the agent, a job's checkpoint directory on the server. Nothing is
 * followed, and every step works from an open directory, never a path, so
 * a tree that changes under the removal cannot steer it elsewhere: a
 * symbolic link is removed, never what it points to. A directory that is a
 * mount point (a bind mount left by a job that ran as root, say) is not
 * entered, so another filesystem's files, or this one's seen through the
 * mount, are never removed; the mount point and its parents then stay.
 * Mount points are told by their mount id: statx's STATX_MNT_ID (Linux
 * 5.8), else the mnt_id line of /proc/self/fdinfo (Linux 3.15); without
 * either nothing is removed.
 */
#ifndef TIDE_COMMON_REMOVE_TREE_H
#define TIDE_COMMON_REMOVE_TREE_H

#include <stdbool.h>

/* How deep remove_tree_at goes (a descriptor open per level); what lies
 * deeper stays. */
#define REMOVE_TREE_MAX_DEPTH 128

/* Removes name in the directory dirfd, with everything under it (a file
 * or a directory). A directory it owns but may not read or write is made
 * 0700 first (a job may leave its directories 0500). stop, when not NULL,
 * is looked at between entries: once true, the removal ends early. Returns
 * 0 once name is gone or if it was not there, or the negative errno of the
 * first failure (what could be removed is): -EXDEV for a mount point met
 * on the way, -ELOOP past REMOVE_TREE_MAX_DEPTH, -ECANCELED when stopped,
 * -ENOSYS where mount points cannot be told. */
int remove_tree_at(int dirfd, const char *name, const bool *stop);

/* Whether remove_tree_at can tell mount points under dirfd (else it
 * removes nothing there). */
bool remove_tree_can_tell_mounts(int dirfd);

#endif
