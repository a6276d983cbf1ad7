/*
 * A plain-socket HTTP/1.1 client for http:// URLs (see http_plain.h): the
 * URL, connecting without blocking past a deadline, the request bytes, the
 * answer's framing (Content-Length, chunked, or read to close), and each
 * thread's kept connections.
 */
#include "common/http_plain.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define HEADERS_MAX (64 * 1024)
#define CONNECT_MS 5000
/* How often a wait looks at the thread's cancel flag. */
#define CANCEL_CHECK_MS 1000
/* Kept connections per thread (an agent thread talks to one server at a
 * time; a failover moves it to another). */
#define KEPT_MAX 4

/* Reasons of our own, next to errno values, for the error text. */
#define WHY_NOT_HTTP EPROTO
#define WHY_TOO_BIG EFBIG
#define WHY_CLOSED_EARLY ECONNRESET /* closed before any byte of an answer */
#define WHY_CLOSED_MIDWAY ENODATA   /* closed in the middle of an answer */
#define WHY_CANCELLED ECANCELED

struct target {
    char host[256]; /* without brackets */
    char port[8];
    const char *path; /* into the URL; "/" when it has none */
    int bracketed;    /* the URL spelled the host as [IPv6] */
};

int http_plain_handles(const char *url)
{
    if (!url || strncasecmp(url, "http://", 7))
        return 0;
    const char *host = url + 7;
    if (*host == '[')
        return 1;
    char name[64];
    size_t n = strcspn(host, ":/?#");
    if (n == 0 || n >= sizeof name)
        return 0;
    memcpy(name, host, n);
    name[n] = '\0';
    struct in_addr a;
    return inet_pton(AF_INET, name, &a) == 1 || !strcasecmp(name, "localhost");
}

static int parse_url(const char *url, struct target *t)
{
    memset(t, 0, sizeof *t);
    if (!http_plain_handles(url))
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

/* ---- kept connections, per thread ---- */

struct kept_conn {
    int fd; /* -1: a free slot */
    char host[256];
    char port[8];
    long long idle_since_ms;
};

/* A thread's kept connections. All are on one list, so those of threads
 * still running at exit stay reachable rather than leaked. */
struct plain_thread {
    pid_t pid; /* the process that made it: a forked child does not use it */
    struct kept_conn conns[KEPT_MAX];
    struct plain_thread *prev, *next;
};

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static int key_ok;
static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
static struct plain_thread *threads;

static void close_all(struct plain_thread *t)
{
    for (int i = 0; i < KEPT_MAX; i++)
        if (t->conns[i].fd >= 0) {
            close(t->conns[i].fd);
            t->conns[i].fd = -1;
        }
}

/* The key's destructor: the thread ended, its connections close. */
static void thread_free(void *p)
{
    struct plain_thread *t = p;
    if (t->pid != getpid())
        return; /* a forked child's copy: the list and memory are the parent's */
    pthread_mutex_lock(&threads_mu);
    if (t->prev)
        t->prev->next = t->next;
    else
        threads = t->next;
    if (t->next)
        t->next->prev = t->prev;
    pthread_mutex_unlock(&threads_mu);
    close_all(t);
    free(t);
}

static void make_key(void)
{
    key_ok = pthread_key_create(&thread_key, thread_free) == 0;
}

/* The calling thread's kept connections, made on first use; NULL when
 * out of memory (requests then use a new connection each). A child forked
 * by a thread that had some closes its copies (the parent's connections
 * stay up: the parent still holds them) and starts afresh. */
static struct plain_thread *thread_state(void)
{
    pthread_once(&key_once, make_key);
    if (!key_ok)
        return NULL;
    struct plain_thread *t = pthread_getspecific(thread_key);
    if (t && t->pid != getpid()) {
        close_all(t); /* no lock: the parent's list is not ours to touch */
        t->pid = getpid();
        return t;
    }
    if (t)
        return t;
    if (!(t = calloc(1, sizeof *t)))
        return NULL;
    t->pid = getpid();
    for (int i = 0; i < KEPT_MAX; i++)
        t->conns[i].fd = -1;
    if (pthread_setspecific(thread_key, t) != 0) {
        free(t);
        return NULL;
    }
    pthread_mutex_lock(&threads_mu);
    t->next = threads;
    if (threads)
        threads->prev = t;
    threads = t;
    pthread_mutex_unlock(&threads_mu);
    return t;
}

void http_plain_thread_release(void)
{
    pthread_once(&key_once, make_key);
    if (!key_ok)
        return;
    struct plain_thread *t = pthread_getspecific(thread_key);
    if (!t)
        return;
    if (t->pid != getpid()) {
        close_all(t);
        t->pid = getpid();
        return;
    }
    pthread_setspecific(thread_key, NULL);
    thread_free(t);
}

/* Whether a kept connection still looks usable: nothing to read on it (a
 * server that closed it sent FIN; anything else would be out of turn). */
static int looks_alive(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    return poll(&pfd, 1, 0) == 0;
}

/* Takes the thread's kept connection to t out of its table: the socket, or
 * -1 when it has none fit for use. Closes those idle too long on the way. */
static int take_kept(struct plain_thread *pt, const struct target *t, long long now)
{
    int fd = -1;
    for (int i = 0; i < KEPT_MAX; i++) {
        struct kept_conn *k = &pt->conns[i];
        if (k->fd < 0)
            continue;
        int stale = now - k->idle_since_ms >= HTTP_PLAIN_KEEP_IDLE_S * 1000LL;
        int ours = !strcmp(k->host, t->host) && !strcmp(k->port, t->port);
        if (stale || (ours && fd < 0 && !looks_alive(k->fd))) {
            close(k->fd);
            k->fd = -1;
        } else if (ours && fd < 0) {
            fd = k->fd;
            k->fd = -1;
        }
    }
    return fd;
}

/* Puts a connection that answered in full back in the table, in place of
 * the one idle longest when the table is full. */
static void keep(struct plain_thread *pt, const struct target *t, int fd, long long now)
{
    struct kept_conn *slot = &pt->conns[0];
    for (int i = 0; i < KEPT_MAX; i++) {
        struct kept_conn *k = &pt->conns[i];
        if (k->fd < 0) {
            slot = k;
            break;
        }
        if (k->idle_since_ms < slot->idle_since_ms)
            slot = k;
    }
    if (slot->fd >= 0)
        close(slot->fd);
    slot->fd = fd;
    snprintf(slot->host, sizeof slot->host, "%s", t->host);
    snprintf(slot->port, sizeof slot->port, "%s", t->port);
    slot->idle_since_ms = now;
}

/* ---- connecting and sending ---- */

/* Waits for events on fd until the deadline, looking at the cancel flag at
 * least every CANCEL_CHECK_MS and after a signal: 1 ready, 0 timed out, -1
 * error (errno set), -2 cancelled. */
static int wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        if (http_client_cancelled())
            return -2;
        long long left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = events};
        int n = poll(&pfd, 1, left > CANCEL_CHECK_MS ? CANCEL_CHECK_MS : (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* The reason for a wait_fd result that is not "ready". */
static int wait_why(int ready)
{
    return ready == 0 ? ETIMEDOUT : ready == -2 ? WHY_CANCELLED : errno;
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
        *why = wait_why(ready);
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
        *why = rc < 0 ? rc : -rc; /* negative: glibc's EAI_* code, see reason_text */
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = list; a && fd < 0 && *why != WHY_CANCELLED; a = a->ai_next)
        fd = connect_one(a->ai_addr, a->ai_addrlen, deadline, why);
    freeaddrinfo(list);
    return fd;
}

/* Sends the parts in iov[0..n) (advanced in place) in one sendmsg when
 * the socket takes it all, as it does for a request's few kilobytes. */
static int send_parts(int fd, struct iovec *iov, int n, long long deadline, int *why)
{
    while (n > 0) {
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (sent > 0) {
            while (n > 0 && (size_t)sent >= iov->iov_len) {
                sent -= (ssize_t)iov->iov_len;
                iov++;
                n--;
            }
            if (n > 0) {
                iov->iov_base = (char *)iov->iov_base + sent;
                iov->iov_len -= (size_t)sent;
            }
            continue;
        }
        if (sent < 0 && errno == EINTR) {
            if (http_client_cancelled()) {
                *why = WHY_CANCELLED;
                return -1;
            }
            continue;
        }
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int ready = wait_fd(fd, POLLOUT, deadline);
            if (ready <= 0) {
                *why = wait_why(ready);
                return -1;
            }
            continue;
        }
        *why = sent < 0 ? errno : EPIPE;
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

/* Writes the request line and headers (the body goes out as it is, see
 * send_parts) into buf; returns the length they need, which may be size
 * or more (then nothing usable was written), as snprintf does. */
static size_t build_head(char *buf, size_t size, const char *method, const struct target *t,
                         const char *token, const char *idem_key, const char *body)
{
    int v6 = t->bracketed || strchr(t->host, ':');
    int has_token = token && *token;
    char length[96] = "";
    if (body)
        snprintf(length, sizeof length,
                 "Content-Type: application/json\r\nContent-Length: %zu\r\n", strlen(body));
    else if (!strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH"))
        snprintf(length, sizeof length, "Content-Length: 0\r\n");
    int n = snprintf(buf, size,
                     "%s %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: tide\r\n"
                     "Accept: application/json\r\n%s%s%s%s%s%s%s\r\n",
                     method, t->path, v6 ? "[" : "", t->host, v6 ? "]" : "", t->port,
                     has_token ? "Authorization: Bearer " : "", has_token ? token : "",
                     has_token ? "\r\n" : "", idem_key ? "Idempotency-Key: " : "",
                     idem_key ? idem_key : "", idem_key ? "\r\n" : "", length);
    return n < 0 ? 0 : (size_t)n;
}

/* ---- reading the answer ---- */

/* The bytes read from a connection and not yet used: buf[pos..len),
 * NUL-terminated at len. */
struct reader {
    int fd;
    long long deadline;
    char *buf; /* the caller's (on its stack) until more is needed */
    size_t pos, len, cap;
    int on_heap;  /* buf was allocated here */
    int got_any; /* any byte of an answer came */
};

/* Reads more bytes after the unread ones. 1 some came, 0 the server
 * closed, -1 error with *why. */
static int reader_fill(struct reader *r, int *why)
{
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    if (r->len + 1 >= r->cap) {
        if (r->cap > HEADERS_MAX) {
            *why = WHY_NOT_HTTP; /* a header block or chunk line without end */
            return -1;
        }
        char *grown = r->on_heap ? realloc(r->buf, r->cap * 2 + 1) : malloc(r->cap * 2 + 1);
        if (!grown) {
            *why = ENOMEM;
            return -1;
        }
        if (!r->on_heap)
            memcpy(grown, r->buf, r->len + 1);
        r->on_heap = 1;
        r->buf = grown;
        r->cap = r->cap * 2 + 1;
    }
    /* the answer's first bytes are seldom there yet when asked for: wait
     * first rather than pay a recv that finds nothing */
    int ready = r->got_any ? 1 : wait_fd(r->fd, POLLIN, r->deadline);
    if (ready <= 0) {
        *why = wait_why(ready);
        return -1;
    }
    for (;;) {
        ssize_t n = recv(r->fd, r->buf + r->len, r->cap - 1 - r->len, 0);
        if (n > 0) {
            r->len += (size_t)n;
            r->buf[r->len] = '\0';
            r->got_any = 1;
            return 1;
        }
        if (n == 0)
            return 0;
        if (errno == EINTR) {
            if (http_client_cancelled()) {
                *why = WHY_CANCELLED;
                return -1;
            }
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            ready = wait_fd(r->fd, POLLIN, r->deadline);
            if (ready <= 0) {
                *why = wait_why(ready);
                return -1;
            }
            continue;
        }
        *why = errno == ECONNRESET && r->got_any ? WHY_CLOSED_MIDWAY : errno;
        return -1;
    }
}

/* reader_fill where the answer must go on: the server closing is an error. */
static int reader_more(struct reader *r, int *why)
{
    int n = reader_fill(r, why);
    if (n == 0)
        *why = r->got_any ? WHY_CLOSED_MIDWAY : WHY_CLOSED_EARLY;
    return n > 0 ? 0 : -1;
}

/* The next line (without its CRLF or LF), NUL-terminated in place; moves
 * past it. NULL with *why when it cannot be had. */
static char *reader_line(struct reader *r, int *why)
{
    char *eol;
    while (!(eol = memchr(r->buf + r->pos, '\n', r->len - r->pos)))
        if (reader_more(r, why) != 0)
            return NULL;
    char *line = r->buf + r->pos;
    r->pos = (size_t)(eol + 1 - r->buf);
    if (eol > line && eol[-1] == '\r')
        eol--;
    *eol = '\0';
    return line;
}

struct body {
    char *data;
    size_t len, cap;
};

static int body_append(struct body *b, const char *p, size_t n, int *why)
{
    if (b->len + n > (size_t)HTTP_PLAIN_BODY_MAX) {
        *why = WHY_TOO_BIG;
        return -1;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) {
            *why = ENOMEM;
            return -1;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* Moves up to want bytes of the body from the reader; reads more while
 * want is left. until_close: want is "all", ended by the server closing. */
static int body_take(struct reader *r, struct body *b, unsigned long long want, int until_close,
                     int *why)
{
    for (;;) {
        size_t have = r->len - r->pos;
        size_t n = !until_close && want < have ? (size_t)want : have;
        if (n && body_append(b, r->buf + r->pos, n, why) != 0)
            return -1;
        r->pos += n;
        want -= until_close ? 0 : n;
        if (!until_close && want == 0)
            return 0;
        int got = reader_fill(r, why);
        if (got < 0)
            return -1;
        if (got == 0) {
            if (until_close)
                return 0;
            *why = WHY_CLOSED_MIDWAY;
            return -1;
        }
    }
}

/* What the header block says about the answer. */
struct answer_head {
    long status;
    int minor;                /* HTTP/1.minor */
    long long content_length; /* -1 when absent */
    int chunked;
    int conn_close, conn_keep_alive; /* the Connection header's tokens */
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

/* Whether the comma-separated list v[0..vlen) holds token (any case). */
static int has_token(const char *v, size_t vlen, const char *token)
{
    size_t n = strlen(token);
    for (size_t i = 0; i + n <= vlen; i++)
        if (!strncasecmp(v + i, token, n) && (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ') &&
            (i + n == vlen || v[i + n] == ',' || v[i + n] == ' ' || v[i + n] == ';'))
            return 1;
    return 0;
}

/* Reads the status line and headers. 0, or -1 with *why. */
static int read_head(struct reader *r, struct answer_head *h, struct http_plain_extra *extra,
                     int *why)
{
    memset(h, 0, sizeof *h);
    h->content_length = -1;
    const char *line = reader_line(r, why);
    if (!line)
        return -1;
    if (strncmp(line, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)line[7]) ||
        line[8] != ' ' || !isdigit((unsigned char)line[9])) {
        *why = WHY_NOT_HTTP;
        return -1;
    }
    h->minor = line[7] - '0';
    h->status = strtol(line + 9, NULL, 10);
    if (h->status < 100 || h->status > 599) {
        *why = WHY_NOT_HTTP;
        return -1;
    }
    for (size_t total = strlen(line);;) {
        char *hl = reader_line(r, why);
        if (!hl)
            return -1;
        size_t len = strlen(hl), vlen;
        if (len == 0)
            return 0;
        if ((total += len) > HEADERS_MAX) {
            *why = WHY_NOT_HTTP;
            return -1;
        }
        const char *v;
        if ((v = header_value(hl, len, "Content-Length", &vlen))) {
            char num[24];
            if (vlen == 0 || vlen >= sizeof num || strspn(v, "0123456789") < vlen) {
                *why = WHY_NOT_HTTP;
                return -1;
            }
            memcpy(num, v, vlen);
            num[vlen] = '\0';
            long long n = strtoll(num, NULL, 10);
            if (h->content_length >= 0 && h->content_length != n) {
                *why = WHY_NOT_HTTP; /* two lengths: which body is it? */
                return -1;
            }
            h->content_length = n;
        } else if ((v = header_value(hl, len, "Transfer-Encoding", &vlen))) {
            h->chunked = vlen >= 7 && !strncasecmp(v + vlen - 7, "chunked", 7);
        } else if ((v = header_value(hl, len, "Connection", &vlen))) {
            h->conn_close |= has_token(v, vlen, "close");
            h->conn_keep_alive |= has_token(v, vlen, "keep-alive");
        } else if (extra && (v = header_value(hl, len, "X-Tide-Leader", &vlen)) &&
                   vlen < sizeof extra->leader) {
            memcpy(extra->leader, v, vlen);
            extra->leader[vlen] = '\0';
        }
    }
}

/* Reads a chunked body, trailers included. 0, or -1 with *why. */
static int read_chunked(struct reader *r, struct body *b, int *why)
{
    for (;;) {
        char *line = reader_line(r, why);
        if (!line)
            return -1;
        /* 1 to 16 hex digits, then an extension or the end: no sign, space or 0x */
        size_t digits = strspn(line, "0123456789abcdefABCDEF");
        const char *end = line + digits;
        if (digits == 0 || digits > 16 || (*end && *end != ';' && *end != ' ' && *end != '\t')) {
            *why = WHY_NOT_HTTP;
            return -1;
        }
        unsigned long long size = strtoull(line, NULL, 16);
        if (size > (unsigned long long)HTTP_PLAIN_BODY_MAX) {
            *why = WHY_TOO_BIG;
            return -1;
        }
        if (size == 0)
            break;
        if (body_take(r, b, size, 0, why) != 0 || !(line = reader_line(r, why)))
            return -1;
        if (*line) {
            *why = WHY_NOT_HTTP; /* a chunk longer than it said */
            return -1;
        }
    }
    for (;;) { /* trailers, up to the empty line */
        char *line = reader_line(r, why);
        if (!line)
            return -1;
        if (!*line)
            return 0;
    }
}

/* Reads one whole answer into resp. 0 with *keep_it saying whether the
 * connection may carry another request, or -1 with *why. */
static int read_answer(struct reader *r, const char *method, struct http_plain_extra *extra,
                       struct http_response *resp, int *keep_it, int *why)
{
    struct answer_head h;
    do { /* an interim 1xx answer is followed by the real one */
        if (read_head(r, &h, extra, why) != 0)
            return -1;
    } while (h.status < 200 && h.status != 101);
    struct body b = {0};
    int rc = 0, to_close = 0;
    if (!strcmp(method, "HEAD") || h.status == 204 || h.status == 304 || h.status == 101) {
        to_close = h.status == 101;
    } else if (h.chunked) {
        rc = read_chunked(r, &b, why);
    } else if (h.content_length >= 0) {
        if (h.content_length > HTTP_PLAIN_BODY_MAX) {
            *why = WHY_TOO_BIG;
            rc = -1;
        } else if (!(b.data = malloc((size_t)h.content_length + 1))) {
            *why = ENOMEM; /* one allocation of the right size */
            rc = -1;
        } else {
            b.cap = (size_t)h.content_length + 1;
            b.data[0] = '\0';
            rc = body_take(r, &b, (unsigned long long)h.content_length, 0, why);
        }
    } else {
        to_close = 1;
        rc = body_take(r, &b, 0, 1, why);
    }
    if (rc == 0 && !b.data && !(b.data = calloc(1, 1))) {
        *why = ENOMEM;
        rc = -1;
    }
    if (rc != 0) {
        free(b.data);
        return -1;
    }
    /* a length beside chunked framing: the next answer's start is in doubt */
    *keep_it = !to_close && !h.conn_close && (h.minor >= 1 || h.conn_keep_alive) &&
               !(h.chunked && h.content_length >= 0) &&
               r->pos == r->len; /* bytes past the answer: out of step */
    resp->status = h.status;
    resp->body = b.data;
    resp->len = b.len;
    return 0;
}

/* ---- one request ---- */

static void reason_text(int why, int connecting, long timeout_ms, char *buf, size_t size)
{
    if (why < 0)
        snprintf(buf, size, "cannot resolve the host name: %s", gai_strerror(why));
    else if (why == WHY_NOT_HTTP)
        snprintf(buf, size, "the answer is not HTTP/1.x");
    else if (why == WHY_TOO_BIG)
        snprintf(buf, size, "the answer is larger than %ld MiB", HTTP_PLAIN_BODY_MAX >> 20);
    else if (why == WHY_CLOSED_EARLY)
        snprintf(buf, size, "the server closed the connection before answering");
    else if (why == WHY_CLOSED_MIDWAY)
        snprintf(buf, size, "the server closed the connection in the middle of its answer");
    else if (why == WHY_CANCELLED)
        snprintf(buf, size, "cancelled");
    else if (why == ETIMEDOUT && connecting)
        snprintf(buf, size, "could not connect within %ld ms",
                 timeout_ms > 0 && timeout_ms < CONNECT_MS ? timeout_ms : (long)CONNECT_MS);
    else if (why == ETIMEDOUT)
        snprintf(buf, size, "no answer within %ld ms", timeout_ms);
    else
        snprintf(buf, size, "%s", strerror(why));
}

/* Whether a request on a kept connection failed the way a connection the
 * server had already closed fails: worth one more try on a new one. */
static int is_dead_kept(int why, int got_any)
{
    return !got_any && (why == WHY_CLOSED_EARLY || why == EPIPE || why == ECONNABORTED);
}

int http_plain_request(const char *method, const char *url, const char *token,
                       const char *json_body, long timeout_ms, struct http_plain_extra *extra,
                       struct http_response *resp, struct tide_err *err)
{
    memset(resp, 0, sizeof *resp);
    if (extra) {
        extra->leader[0] = '\0';
        extra->unsent = 1;
    }
    struct target t;
    if (parse_url(url, &t) != 0)
        return tide_err_set(err, TIDE_EINVAL, "server", "%s %s: not a URL of the form "
                                                        "http://HOST[:PORT][/PATH]",
                            method, url);
    const char *idem = extra ? extra->idempotency_key : NULL;
    /* the server may have done it before the connection died under it */
    bool repeatable = idem || (extra && extra->repeatable) || !strcmp(method, "GET") ||
                      !strcmp(method, "HEAD") || !strcmp(method, "PUT") || !strcmp(method, "DELETE");
    if ((token && !is_header_safe(token)) || (idem && !is_header_safe(idem)))
        return tide_err_set(err, TIDE_EINVAL, token && !is_header_safe(token) ? "token" : NULL,
                            "%s %s: the %s holds a control character", method, url,
                            token && !is_header_safe(token) ? "token" : "idempotency key");
    if (http_client_cancelled())
        return tide_err_set(err, TIDE_EIO, NULL, "%s %s: cancelled", method, url);
    long long start = now_ms();
    long long deadline = start + (timeout_ms > 0 ? timeout_ms : 30000);
    /* the request's head and the answer's first bytes fit on the stack:
     * no allocation of a kilobyte or more per request, which would make
     * malloc sort its small free chunks each time (malloc_consolidate) */
    char head_buf[2048], read_buf[4096];
    char *head = head_buf;
    size_t head_len = build_head(head_buf, sizeof head_buf, method, &t, token, idem, json_body);
    if (head_len >= sizeof head_buf) {
        if (!(head = malloc(head_len + 1)))
            return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        build_head(head, head_len + 1, method, &t, token, idem, json_body);
    }
    struct reader r = {.fd = -1, .deadline = deadline, .buf = read_buf, .cap = sizeof read_buf};
    struct plain_thread *pt = thread_state();
    int fd = pt ? take_kept(pt, &t, start) : -1;
    int reused = fd >= 0, why = 0, connecting = 0, keep_it = 0, rc = 0;
    for (;;) {
        if (fd < 0) {
            /* a server that drops SYNs should not hold up the next one for long */
            long long connect_by = now_ms() + CONNECT_MS;
            fd = connect_target(&t, connect_by < deadline ? connect_by : deadline, &why);
            if (fd < 0) {
                connecting = 1;
                rc = -1;
                break;
            }
        }
        if (extra)
            extra->unsent = 0;
        r.fd = fd;
        r.pos = r.len = 0;
        r.got_any = 0;
        struct iovec iov[2] = {{.iov_base = head, .iov_len = head_len},
                               {.iov_base = (void *)json_body,
                                .iov_len = json_body ? strlen(json_body) : 0}};
        if (send_parts(fd, iov, json_body ? 2 : 1, deadline, &why) == 0 &&
            read_answer(&r, method, extra, resp, &keep_it, &why) == 0)
            break;
        close(fd);
        fd = -1;
        if (!reused || !repeatable || !is_dead_kept(why, r.got_any)) {
            rc = -1;
            break;
        }
        reused = 0; /* once more, on a new connection */
        if (extra)
            extra->leader[0] = '\0';
    }
    if (r.on_heap)
        free(r.buf);
    if (head != head_buf)
        free(head);
    if (rc == 0) {
        if (keep_it && pt)
            keep(pt, &t, fd, now_ms());
        else
            close(fd);
        return 0;
    }
    char text[160];
    reason_text(why, connecting, timeout_ms, text, sizeof text);
    return tide_err_set(err, why == WHY_TOO_BIG ? TIDE_ETOOBIG : TIDE_EIO, NULL, "%s %s: %s",
                        method, url, text);
}
