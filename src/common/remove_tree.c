/* Removing a tree without following links or entering mounts (remove_tree.h). */
#include "common/remove_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How the mount of a directory is told: statx's mount id (Linux 5.8), else
 * the mnt_id line of /proc/self/fdinfo/FD (Linux 3.15); one way for a
 * whole removal. */
enum mount_source { MOUNT_BY_STATX, MOUNT_BY_FDINFO };

struct walk {
    enum mount_source source;
    uint64_t mount; /* the tree's */
    const bool *stop;
};

static int mount_from_fdinfo(int fd, uint64_t *id)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -ENOSYS;
    ssize_t n = read(in, text, sizeof text - 1);
    close(in);
    text[n > 0 ? n : 0] = '\0';
    const char *line = strstr(text, "mnt_id:");
    if (!line)
        return -ENOSYS;
    *id = strtoull(line + strlen("mnt_id:"), NULL, 10);
    return 0;
}

static int mount_of(int fd, enum mount_source source, uint64_t *id)
{
    if (source == MOUNT_BY_FDINFO)
        return mount_from_fdinfo(fd, id);
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &sx) != 0)
        return -errno;
    if (!(sx.stx_mask & STATX_MNT_ID))
        return -ENOSYS;
    *id = sx.stx_mnt_id;
    return 0;
}

static int remove_entry(int dirfd, const char *name, const struct walk *w, int depth);

/* Opens the directory name in dirfd for reading without following a link;
 * one the caller owns but may not read is made 0700 first. */
static int open_dir(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES && fchmodat(dirfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Removes the directory name in parent with what it holds. */
static int remove_dir(int parent, const char *name, const struct walk *w, int depth)
{
    if (depth >= REMOVE_TREE_MAX_DEPTH)
        return -ELOOP;
    int fd = open_dir(parent, name);
    if (fd < 0)
        return fd;
    uint64_t here = 0;
    int rc = mount_of(fd, w->source, &here);
    if (rc == 0 && here != w->mount)
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
        if (w->stop && __atomic_load_n(w->stop, __ATOMIC_RELAXED)) {
            rc = -ECANCELED;
            break;
        }
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        int r = remove_entry(dirfd(d), e->d_name, w, depth + 1);
        if (r && !rc)
            rc = r;
        if (r == -ECANCELED)
            break;
    }
    closedir(d);
    if (rc)
        return rc;
    return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -errno;
}

static int remove_entry(int dirfd, const char *name, const struct walk *w, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR) /* Linux's answer for a directory */
        return -errno;
    return remove_dir(dirfd, name, w, depth);
}

/* The way mounts under dirfd are told, and the mount of dirfd: 0, or
 * -ENOSYS when the kernel tells neither way. */
static int start_walk(int dirfd, struct walk *w)
{
    w->source = MOUNT_BY_STATX;
    int rc = mount_of(dirfd, w->source, &w->mount);
    if (rc == -ENOSYS) {
        w->source = MOUNT_BY_FDINFO;
        rc = mount_of(dirfd, w->source, &w->mount);
    }
    return rc;
}

int remove_tree_at(int dirfd, const char *name, const bool *stop)
{
    struct walk w = {.stop = stop};
    int rc = start_walk(dirfd, &w);
    return rc ? rc : remove_entry(dirfd, name, &w, 0);
}

bool remove_tree_can_tell_mounts(int dirfd)
{
    struct walk w = {0};
    return start_walk(dirfd, &w) == 0;
}
