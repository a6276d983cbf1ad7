/* Finds the process behind a listening port (see port_owner.h). */
#include "common/port_owner.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TCP_LISTEN 0x0A

/* The socket inode listening on port, from one /proc/net/tcp* table. */
static unsigned long listening_inode(const char *table, int port)
{
    FILE *f = fopen(table, "r");
    if (!f)
        return 0;
    char line[512];
    unsigned long found = 0;
    if (!fgets(line, sizeof line, f)) /* header */
        line[0] = '\0';
    while (!found && fgets(line, sizeof line, f)) {
        char local[128];
        unsigned int state;
        unsigned long inode;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*s %127s %*s %x %*s %*s %*s %*s %*s %lu", local, &state, &inode) != 3)
            continue;
        const char *colon = strrchr(local, ':');
        if (colon && state == TCP_LISTEN && strtol(colon + 1, NULL, 16) == port)
            found = inode;
    }
    fclose(f);
    return found;
}

static int pid_holds_socket(const char *pid, const char *want)
{
    char dir_path[300];
    snprintf(dir_path, sizeof dir_path, "/proc/%s/fd", pid);
    DIR *fds = opendir(dir_path);
    if (!fds)
        return 0;
    struct dirent *fd;
    int held = 0;
    while (!held && (fd = readdir(fds))) {
        char link_path[600], target[64];
        snprintf(link_path, sizeof link_path, "%s/%s", dir_path, fd->d_name);
        ssize_t n = readlink(link_path, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            held = !strcmp(target, want);
        }
    }
    closedir(fds);
    return held;
}

static void describe_pid(const char *pid, char *out, size_t cap)
{
    char path[300], cmd[256] = "";
    snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, cmd, sizeof cmd - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 0)
        n = 0;
    cmd[n] = '\0';
    for (ssize_t i = 0; i + 1 < n; i++) /* arguments are NUL-separated */
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    snprintf(out, cap, "pid %s (%s)", pid, cmd[0] ? cmd : "?");
}

int port_owner_describe(int port, char *out, size_t cap)
{
    unsigned long inode = listening_inode("/proc/net/tcp", port);
    if (!inode)
        inode = listening_inode("/proc/net/tcp6", port);
    if (!inode)
        return -1;
    char want[64];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    if (!proc)
        return -1;
    struct dirent *e;
    int rc = -1;
    while (rc && (e = readdir(proc))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        if (pid_holds_socket(e->d_name, want)) {
            describe_pid(e->d_name, out, cap);
            rc = 0;
        }
    }
    closedir(proc);
    return rc;
}
