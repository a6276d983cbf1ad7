/*
 * Preloaded into a server by test_disk.py: fdatasync fails with EIO once
 * the file named by TIDE_TEST_FAIL_SYNC exists (a disk that went bad),
 * and works as ever before that.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int fdatasync(int fd)
{
    static int (*real)(int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "fdatasync");
    const char *flag = getenv("TIDE_TEST_FAIL_SYNC");
    if (flag && access(flag, F_OK) == 0) {
        errno = EIO;
        return -1;
    }
    return real ? real(fd) : -1;
}
