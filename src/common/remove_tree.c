/* Removing a tree without following links or entering mounts (remove_tree.h). */
#include "common/remove_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What tells the mount a directory is on: its mount id where the kernel
 * gives one, else its filesystem's device (the same kind for a whole
 * removal). */
struct mount_key {
    bool by_id;
    uint64_t value;
};

static int mount_of(int fd, bool by_id, struct mount_key *out)
{
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &sx) != 0)
        return -errno;
    out->by_id = by_id && (sx.stx_mask & STATX_MNT_ID);
    out->value = out->by_id ? sx.stx_mnt_id : ((uint64_t)sx.stx_dev_major << 32 | sx.stx_dev_minor);
    return 0;
}

static int remove_entry(int dirfd, const char *name, const struct mount_key *mount, int depth);

/* Opens the directory name in dirfd for reading without following a link;
 * one the caller owns but may not read is made 0700 first. */
static int open_dir(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES && fchmodat(dirfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Removes the directory name in parent, on mount, with what it holds. */
static int remove_dir(int parent, const char *name, const struct mount_key *mount, int depth)
{
    if (depth >= REMOVE_TREE_MAX_DEPTH)
        return -ELOOP;
    int fd = open_dir(parent, name);
    if (fd < 0)
        return fd;
    struct mount_key here;
    int rc = mount_of(fd, mount->by_id, &here);
    if (rc == 0 && (here.by_id != mount->by_id || here.value != mount->value))
        rc = -EXDEV; /* a mount point: what is under it is not this tree's */
    struct stat st;
    /* its entries can go only if it is writable: a job may leave it 0500 */
    if (rc == 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 0700) != 0700 &&
        fchmod(fd, 0700) != 0)
        rc = -errno;
    DIR *d = rc == 0 ? fdopendir(fd) : NULL;
    if (!d) {
        rc = rc ? rc : -errno;
        close(fd);
        return rc;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        int r = remove_entry(dirfd(d), e->d_name, mount, depth + 1);
        if (r && !rc)
            rc = r;
    }
    closedir(d);
    if (rc)
        return rc;
    return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -errno;
}

static int remove_entry(int dirfd, const char *name, const struct mount_key *mount, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR) /* Linux's answer for a directory */
        return -errno;
    return remove_dir(dirfd, name, mount, depth);
}

int remove_tree_at(int dirfd, const char *name)
{
    struct mount_key mount;
    int rc = mount_of(dirfd, true, &mount);
    return rc ? rc : remove_entry(dirfd, name, &mount, 0);
}
