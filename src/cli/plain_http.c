/* A plain-socket HTTP/1.1 client for http:// URLs (see plain_http.h). */
#include "cli/plain_http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEADERS_MAX (64 * 1024)
#define PLAIN_HTTP_CONNECT_MS 5000

struct target {
    char host[256]; /* without brackets */
    char port[8];
    const char *path; /* into the URL; "/" when it has none */
    int bracketed;    /* the URL spelled the host as [IPv6] */
};

int plain_http_handles(const char *url)
{
    return url && !strncasecmp(url, "http://", 7);
}

static int parse_url(const char *url, struct target *t)
{
    memset(t, 0, sizeof *t);
    if (!plain_http_handles(url))
        return -1;
    const char *p = url + 7, *host_end, *after;
    if (*p == '[') {
        host_end = strchr(p, ']');
        if (!host_end)
            return -1;
        p++;
        after = host_end + 1;
        t->bracketed = 1;
    } else {
        host_end = p + strcspn(p, ":/?#");
        after = host_end;
    }
    size_t hlen = (size_t)(host_end - p);
    if (hlen == 0 || hlen >= sizeof t->host)
        return -1;
    memcpy(t->host, p, hlen);
    t->host[hlen] = '\0';
    if (*after == ':') {
        after++;
        size_t plen = strspn(after, "0123456789");
        if (plen == 0 || plen >= sizeof t->port || atoi(after) <= 0 || atoi(after) > 65535)
            return -1;
        memcpy(t->port, after, plen);
        t->port[plen] = '\0';
        after += plen;
    } else {
        strcpy(t->port, "80");
    }
    if (*after && *after != '/')
        return -1;
    t->path = *after ? after : "/";
    return 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = events};
        int n = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* Connects to one address without blocking past the deadline; the socket
 * or -1 with *why set to an errno (ETIMEDOUT when the deadline passed). */
static int connect_one(const struct sockaddr *sa, socklen_t salen, long long deadline, int *why)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *why = errno;
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, sa, salen) == 0)
        return fd;
    if (errno != EINPROGRESS) {
        *why = errno;
        close(fd);
        return -1;
    }
    int ready = wait_fd(fd, POLLOUT, deadline);
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (ready <= 0) {
        *why = ready == 0 ? ETIMEDOUT : errno;
    } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) {
        *why = errno;
    } else if (soerr != 0) {
        *why = soerr;
    } else {
        return fd;
    }
    close(fd);
    return -1;
}

/* Numeric addresses skip the resolver (and the NSS modules it would load). */
static int connect_target(const struct target *t, long long deadline, int *why)
{
    unsigned short port = (unsigned short)atoi(t->port);
    struct sockaddr_in in4 = {.sin_family = AF_INET, .sin_port = htons(port)};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    if (inet_pton(AF_INET, t->host, &in4.sin_addr) == 1)
        return connect_one((struct sockaddr *)&in4, sizeof in4, deadline, why);
    if (inet_pton(AF_INET6, t->host, &in6.sin6_addr) == 1)
        return connect_one((struct sockaddr *)&in6, sizeof in6, deadline, why);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list = NULL;
    int rc = getaddrinfo(t->host, t->port, &hints, &list);
    if (rc != 0) {
        *why = -rc; /* negative: a getaddrinfo code, see reason_text */
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = list; a && fd < 0; a = a->ai_next)
        fd = connect_one(a->ai_addr, a->ai_addrlen, deadline, why);
    freeaddrinfo(list);
    return fd;
}

static const char *reason_text(int why, char *buf, size_t size)
{
    if (why < 0)
        snprintf(buf, size, "cannot resolve the host name: %s", gai_strerror(-why));
    else if (why == ETIMEDOUT)
        snprintf(buf, size, "timed out");
    else
        snprintf(buf, size, "%s", strerror(why));
    return buf;
}

static int send_all(int fd, const char *data, size_t len, long long deadline, int *why)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n > 0) {
            data += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int ready = wait_fd(fd, POLLOUT, deadline);
            if (ready <= 0) {
                *why = ready == 0 ? ETIMEDOUT : errno;
                return -1;
            }
            continue;
        }
        *why = n < 0 ? errno : EPIPE;
        return -1;
    }
    return 0;
}

/* A header value must not carry a line break into the request. */
static int is_header_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 && *s != '\t')
            return 0;
    return 1;
}

static char *build_request(const char *method, const struct target *t, const char *token,
                           const char *idem_key, const char *body, size_t *len)
{
    char *out = NULL;
    FILE *f = open_memstream(&out, len);
    if (!f)
        return NULL;
    int v6 = t->bracketed || strchr(t->host, ':');
    fprintf(f, "%s %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: tide-cli\r\n"
               "Connection: close\r\nAccept: application/json\r\n",
            method, t->path, v6 ? "[" : "", t->host, v6 ? "]" : "", t->port);
    if (token && *token)
        fprintf(f, "Authorization: Bearer %s\r\n", token);
    if (idem_key)
        fprintf(f, "Idempotency-Key: %s\r\n", idem_key);
    if (body)
        fprintf(f, "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                strlen(body), body);
    else if (!strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH"))
        fputs("Content-Length: 0\r\n\r\n", f);
    else
        fputs("\r\n", f);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* What the header block says about the body that follows. */
struct answer_head {
    long status;
    long long content_length; /* -1 when absent */
    int chunked;
    size_t body_at; /* offset of the body in the buffer */
};

/* Case-insensitive "Name:" at the start of line; the value (trimmed) or NULL. */
static const char *header_value(const char *line, size_t len, const char *name, size_t *vlen)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
        return NULL;
    const char *v = line + n + 1;
    size_t left = len - n - 1;
    while (left && (*v == ' ' || *v == '\t')) {
        v++;
        left--;
    }
    while (left && isspace((unsigned char)v[left - 1]))
        left--;
    *vlen = left;
    return v;
}

/* Parses the status line and headers in buf[0..end). 0 or -1 (not HTTP). */
static int parse_head(const char *buf, size_t end, struct answer_head *h,
                      struct plain_http_extra *extra)
{
    h->content_length = -1;
    h->chunked = 0;
    if (end < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' ||
        !isdigit((unsigned char)buf[9]))
        return -1;
    h->status = strtol(buf + 9, NULL, 10);
    if (h->status < 100 || h->status > 599)
        return -1;
    const char *line = memchr(buf, '\n', end);
    while (line && (size_t)(line + 1 - buf) < end) {
        line++;
        const char *eol = memchr(line, '\n', end - (size_t)(line - buf));
        size_t len = eol ? (size_t)(eol - line) : end - (size_t)(line - buf);
        size_t vlen;
        const char *v;
        if ((v = header_value(line, len, "Content-Length", &vlen))) {
            char num[24];
            if (vlen == 0 || vlen >= sizeof num || strspn(v, "0123456789") < vlen)
                return -1;
            memcpy(num, v, vlen);
            num[vlen] = '\0';
            h->content_length = strtoll(num, NULL, 10);
        } else if ((v = header_value(line, len, "Transfer-Encoding", &vlen))) {
            h->chunked = vlen >= 7 && !strncasecmp(v + vlen - 7, "chunked", 7);
        } else if (extra && (v = header_value(line, len, "X-Tide-Leader", &vlen)) &&
                   vlen < sizeof extra->leader) {
            memcpy(extra->leader, v, vlen);
            extra->leader[vlen] = '\0';
        }
        line = eol;
    }
    return 0;
}

/* Decodes a chunked body in place. 1 complete (*len set), 0 incomplete,
 * -1 malformed. */
static int dechunk(char *body, size_t have, size_t *len)
{
    size_t in = 0, out = 0;
    for (;;) {
        char *eol = memchr(body + in, '\n', have - in);
        if (!eol)
            return 0;
        char *end;
        errno = 0;
        unsigned long long size = strtoull(body + in, &end, 16);
        if (end == body + in || errno != 0 || size > (unsigned long long)PLAIN_HTTP_BODY_MAX)
            return -1;
        size_t data = (size_t)(eol + 1 - body);
        if (size == 0) {
            *len = out;
            body[out] = '\0';
            return 1; /* trailers, if any, are not needed */
        }
        if (have - data < size + 2)
            return 0;
        memmove(body + out, body + data, (size_t)size);
        out += (size_t)size;
        in = data + (size_t)size;
        if (body[in] == '\r')
            in++;
        if (in >= have || body[in] != '\n')
            return -1;
        in++;
    }
}

/* Reads the whole answer into resp. 0, or -1 with *why (an errno; EPROTO
 * for "not HTTP", EFBIG for too big, ECONNRESET for closed early). */
static int read_answer(int fd, long long deadline, struct plain_http_extra *extra,
                       struct http_response *resp, int *why)
{
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    struct answer_head h = {0};
    int have_head = 0;
    if (!buf) {
        *why = ENOMEM;
        return -1;
    }
    for (;;) {
        if (have_head) {
            size_t got = len - h.body_at;
            if (h.status == 204 || h.status == 304 ||
                (h.content_length >= 0 && (long long)got >= h.content_length))
                break;
        }
        if (len + 4096 + 1 > cap) {
            if (cap >= (size_t)PLAIN_HTTP_BODY_MAX + HEADERS_MAX) {
                *why = EFBIG;
                goto fail;
            }
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                *why = ENOMEM;
                goto fail;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int ready = wait_fd(fd, POLLIN, deadline);
            if (ready <= 0) {
                *why = ready == 0 ? ETIMEDOUT : errno;
                goto fail;
            }
            continue;
        }
        if (n < 0) {
            *why = errno;
            goto fail;
        }
        if (n == 0) { /* closed: the end of a body without a length */
            if (!have_head || h.content_length >= 0 || h.chunked) {
                *why = ECONNRESET;
                goto fail;
            }
            break;
        }
        len += (size_t)n;
        buf[len] = '\0';
        if (!have_head) {
            char *end = strstr(buf, "\r\n\r\n");
            if (!end) {
                if (len > HEADERS_MAX) {
                    *why = EPROTO;
                    goto fail;
                }
                continue;
            }
            if (parse_head(buf, (size_t)(end - buf) + 2, &h, extra) != 0) {
                *why = EPROTO;
                goto fail;
            }
            h.body_at = (size_t)(end - buf) + 4;
            have_head = 1;
            if (h.content_length > PLAIN_HTTP_BODY_MAX) {
                *why = EFBIG;
                goto fail;
            }
        }
        if (h.chunked && len - h.body_at >= 5 && !memcmp(buf + len - 4, "\r\n\r\n", 4)) {
            size_t blen;
            int done = dechunk(buf + h.body_at, len - h.body_at, &blen);
            if (done < 0) {
                *why = EPROTO;
                goto fail;
            }
            if (done) {
                len = h.body_at + blen;
                h.chunked = 0;
                h.content_length = (long long)blen;
            }
        }
    }
    size_t body_len = len - h.body_at;
    if (h.content_length >= 0 && (long long)body_len > h.content_length)
        body_len = (size_t)h.content_length;
    memmove(buf, buf + h.body_at, body_len);
    buf[body_len] = '\0';
    resp->status = h.status;
    resp->body = buf;
    resp->len = body_len;
    return 0;
fail:
    free(buf);
    return -1;
}

int plain_http_request(const char *method, const char *url, const char *token,
                       const char *json_body, long timeout_ms, struct plain_http_extra *extra,
                       struct http_response *resp, struct tide_err *err)
{
    memset(resp, 0, sizeof *resp);
    if (extra) {
        extra->leader[0] = '\0';
        extra->sent = 0;
    }
    struct target t;
    if (parse_url(url, &t) != 0)
        return tide_err_set(err, TIDE_EINVAL, "server", "%s %s: not a URL of the form "
                                                        "http://HOST[:PORT][/PATH]",
                            method, url);
    const char *idem = extra ? extra->idempotency_key : NULL;
    if ((token && !is_header_safe(token)) || (idem && !is_header_safe(idem)))
        return tide_err_set(err, TIDE_EINVAL, token && !is_header_safe(token) ? "token" : NULL,
                            "%s %s: the %s holds a control character", method, url,
                            token && !is_header_safe(token) ? "token" : "idempotency key");
    long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 30000);
    size_t req_len;
    char *req = build_request(method, &t, token, idem, json_body, &req_len);
    if (!req)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    int why = 0, rc = 0;
    /* a server that drops SYNs should not hold up the next one for long */
    long long connect_by = now_ms() + PLAIN_HTTP_CONNECT_MS;
    int fd = connect_target(&t, connect_by < deadline ? connect_by : deadline, &why);
    if (fd >= 0 && extra)
        extra->sent = 1;
    if (fd < 0 || send_all(fd, req, req_len, deadline, &why) != 0 ||
        read_answer(fd, deadline, extra, resp, &why) != 0) {
        char text[160];
        if (why == EPROTO)
            snprintf(text, sizeof text, "the answer is not HTTP/1.x");
        else if (why == EFBIG)
            snprintf(text, sizeof text, "the answer is larger than %ld MiB",
                     PLAIN_HTTP_BODY_MAX >> 20);
        else if (why == ECONNRESET)
            snprintf(text, sizeof text, "the server closed the connection before answering");
        else if (why == ETIMEDOUT && fd < 0)
            snprintf(text, sizeof text, "could not connect within %lld ms",
                     timeout_ms > 0 && timeout_ms < PLAIN_HTTP_CONNECT_MS ? (long long)timeout_ms
                                                                          : PLAIN_HTTP_CONNECT_MS);
        else if (why == ETIMEDOUT)
            snprintf(text, sizeof text, "no answer within %ld ms", timeout_ms);
        else
            reason_text(why, text, sizeof text);
        rc = tide_err_set(err, why == EFBIG ? TIDE_ETOOBIG : TIDE_EIO, NULL, "%s %s: %s",
                          method, url, text);
    }
    if (fd >= 0)
        close(fd);
    free(req);
    return rc;
}
