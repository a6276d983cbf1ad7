/* Chunks of task logs for heartbeats (task_log.h). */
#include "agent/task_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Length of the valid UTF-8 sequence at s (n bytes available): 1..4, 0 if
 * it is invalid, or -(needed) when it is a valid prefix cut short by n. */
static int utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int need;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    for (int i = 1; i < need; i++) {
        if ((size_t)i >= n)
            return -need;
        unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
        if (s[i] < lo_i || s[i] > hi_i)
            return 0;
    }
    return need;
}

size_t agent_task_log_sanitize(char *buf, size_t len, bool final)
{
    unsigned char *s = (unsigned char *)buf;
    size_t i = 0;
    while (i < len) {
        int k = utf8_seq(s + i, len - i);
        if (k < 0) {
            if (!final)
                return i; /* the rest of this character comes later */
            k = 0;
        }
        if (k == 0 || s[i] == 0) {
            s[i] = '?';
            k = 1;
        }
        i += (size_t)k;
    }
    return len;
}

/* Bytes jansson writes for one byte of a string: escapes for '"', '\\' and
 * controls (\n \t \r \b \f short, the rest as \u00XX). */
static size_t json_cost(unsigned char c)
{
    if (c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f')
        return 2;
    return c < 0x20 ? 6 : 1;
}

size_t agent_task_log_fit_json(const char *data, size_t len, size_t budget, size_t *encoded)
{
    const unsigned char *s = (const unsigned char *)data;
    size_t used = 2, i = 0; /* the quotes */
    while (i < len) {
        size_t k = 1; /* a multi-byte character goes whole: sanitized, so complete */
        if (s[i] >= 0xF0)
            k = 4;
        else if (s[i] >= 0xE0)
            k = 3;
        else if (s[i] >= 0xC0)
            k = 2;
        size_t cost = k == 1 ? json_cost(s[i]) : k;
        if (i + k > len || used + cost > budget)
            break;
        used += cost;
        i += k;
    }
    *encoded = used;
    return i;
}

int agent_task_log_chunk(const char *path, int64_t offset, size_t max, bool final, char **data,
                         size_t *len, bool *more)
{
    *data = NULL;
    *len = 0;
    *more = false;
    /* every heartbeat asks this of every task, and most have written
     * nothing new: one stat answers that, without an open and a close */
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (offset < 0 || st.st_size <= offset)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    /* the log only grows, and a short read below is taken as it comes */
    int64_t avail = st.st_size - offset;
    size_t want = avail > (int64_t)max ? max : (size_t)avail;
    char *buf = malloc(want + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < want) {
        ssize_t r = pread(fd, buf + got, want - got, (off_t)(offset + (int64_t)got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = -errno;
            free(buf);
            close(fd);
            return e;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    bool at_end = offset + (int64_t)got >= st.st_size;
    size_t n = agent_task_log_sanitize(buf, got, final && at_end);
    *more = !at_end;
    if (n == 0) {
        free(buf);
        return 0;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}
