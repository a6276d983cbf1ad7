/*
 * make bench, submit section: the most one client could get from a durable
 * submit on this machine. A server that does nothing but what every
 * acknowledged submit must: read the request, write a commit's worth of WAL
 * (three 4 KB pages with their frame headers, 12,360 bytes, at the offsets
 * SQLite's WAL uses, over a file already written once, as the WAL is after
 * its first checkpoint), fdatasync it, and answer 201. No parsing beyond
 * Content-Length, no database, no JSON. bench/submit.py runs it under
 * wrk -c1 beside tide's own 1-client row, so the row can be read against
 * the machine's disk flush and loopback round trip rather than a number
 * set elsewhere.
 * Usage: bench_flush_floor DIR [--no-flush]
 * Listens on 127.0.0.1 (a free port, printed as "port N"), serves one
 * connection at a time until killed; its file is DIR/flush-floor.wal.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define WAL_HEADER 32
#define COMMIT_BYTES (3 * (4096 + 24))
#define WAL_BYTES (4 << 20) /* SQLite's default checkpoint: 1,000 pages */

static const char ANSWER[] = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                             "Content-Length: 10\r\n\r\n{\"id\":1}\r\n";

static int fail(const char *what)
{
    fprintf(stderr, "bench_flush_floor: %s: %s\n", what, strerror(errno));
    return 1;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Bytes of the first whole request in buf[0..have) (headers and body), or
 * 0 while it is still arriving. buf[have] is a NUL. */
static size_t request_length(const char *buf, size_t have)
{
    const char *end = memmem(buf, have, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head = (size_t)(end - buf) + 4, body = 0;
    for (const char *p = buf; p < end; p = strstr(p, "\r\n") + 2)
        if (!strncasecmp(p, "Content-Length:", 15))
            body = strtoul(p + 15, NULL, 10);
    return have >= head + body ? head + body : 0;
}

/* Answers c's requests until it closes; -1 when the file fails. */
static int serve(int c, int wal, const char *frames, bool flush, off_t *at)
{
    static char buf[65536];
    size_t have = 0;
    for (;;) {
        size_t len;
        while (!(len = request_length(buf, have))) {
            if (have == sizeof buf - 1)
                return 0; /* not a request this serves */
            ssize_t n = read(c, buf + have, sizeof buf - 1 - have);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return 0;
            have += (size_t)n;
            buf[have] = '\0';
        }
        if (*at + COMMIT_BYTES > WAL_BYTES)
            *at = WAL_HEADER;
        if (pwrite(wal, frames, COMMIT_BYTES, *at) != COMMIT_BYTES || (flush && fdatasync(wal)))
            return -1;
        *at += COMMIT_BYTES;
        if (write_all(c, ANSWER, sizeof ANSWER - 1))
            return 0;
        memmove(buf, buf + len, have - len);
        have -= len;
        buf[have] = '\0';
    }
}

int main(int argc, char **argv)
{
    bool help = argc == 2 && !strcmp(argv[1], "--help");
    if (help || argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--no-flush"))) {
        fprintf(help ? stdout : stderr, "usage: bench_flush_floor DIR [--no-flush]\n");
        return help ? 0 : 2;
    }
    bool flush = argc == 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/flush-floor.wal", argv[1]);
    int wal = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    char *frames = malloc(WAL_BYTES);
    if (wal < 0 || !frames)
        return fail(path);
    memset(frames, 0x5a, WAL_BYTES);
    if (pwrite(wal, frames, WAL_BYTES, 0) != WAL_BYTES || fdatasync(wal))
        return fail(path);

    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof addr) || listen(s, 16) ||
        getsockname(s, (struct sockaddr *)&addr, &alen))
        return fail("listen");
    printf("port %d\n", ntohs(addr.sin_port));
    fflush(stdout);
    off_t at = WAL_HEADER;
    for (;;) {
        int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0 && errno == EINTR)
            continue;
        if (c < 0)
            return fail("accept");
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int rc = serve(c, wal, frames, flush, &at);
        close(c);
        if (rc)
            return fail(path);
    }
}
