/*
 * http_client.h: http:// requests go to the plain-socket client
 * (http_plain.h), https:// ones and streams to libcurl. libcurl is loaded
 * with dlopen when first needed, not linked: mapping it and the ~30
 * libraries it needs costs ~7 ms of CPU per process, which an agent or a
 * short `tide` command talking to an http:// server would pay for nothing.
 * Each calling thread keeps one curl handle, so its connection to a server
 * (and a TLS session) stays open from one request to the next.
 */
#include "common/fsutil.h"
#include "common/http_client.h"
#include "common/http_plain.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set once at start-up, before threads; read by every request. */
static char *tls_ca_path, *tls_cert_path, *tls_key_path;

/* The libcurl functions used here, found in libcurl.so.4 by load_curl. */
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_reset)(CURL *c);
    CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *c);
    CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
    void (*easy_cleanup)(CURL *c);
    const char *(*easy_strerror)(CURLcode rc);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
} curl;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_loaded; /* 1 loaded and initialised, -1 failed */
static char curl_load_error[256];

/* A thread's curl handle, which holds its open connections. All of them
 * are on one list, so the handles of threads still running at exit stay
 * reachable rather than leaked. */
struct thread_handle {
    CURL *c;
    pid_t pid; /* the process that made it: a forked child leaves it alone */
    struct thread_handle *prev, *next;
};
static pthread_key_t handle_key;
static pthread_mutex_t handles_mu = PTHREAD_MUTEX_INITIALIZER;
static struct thread_handle *handles;

/* The key's destructor: the thread ended, its connections close. */
static void handle_free(void *p)
{
    struct thread_handle *h = p;
    pthread_mutex_lock(&handles_mu);
    if (h->prev)
        h->prev->next = h->next;
    else
        handles = h->next;
    if (h->next)
        h->next->prev = h->prev;
    pthread_mutex_unlock(&handles_mu);
    curl.easy_cleanup(h->c);
    free(h);
}

/* Frees the calling thread's handle (atexit: the exiting thread's; other
 * threads' may be in use). A forked child that calls exit() must not
 * close (or end the TLS session of) its parent's connections. */
static void release_own_handle(void)
{
    struct thread_handle *h = pthread_getspecific(handle_key);
    if (!h || h->pid != getpid())
        return;
    pthread_setspecific(handle_key, NULL);
    handle_free(h);
}

void http_client_thread_release(void)
{
    http_plain_thread_release();
    if (__atomic_load_n(&curl_loaded, __ATOMIC_ACQUIRE) == 1)
        release_own_handle();
}

/* The calling thread's cancel flag (http_client_cancel_on); NULL: none. */
static _Thread_local const int *cancel_flag;

void http_client_cancel_on(const int *flag)
{
    cancel_flag = flag;
}

static int cancelled(void)
{
    return cancel_flag && __atomic_load_n(cancel_flag, __ATOMIC_ACQUIRE);
}

bool http_client_cancelled(void)
{
    return cancelled() != 0;
}

/* CURLOPT_XFERINFOFUNCTION: non-zero abandons the transfer. */
static int check_cancel(void *clientp, curl_off_t dltotal, curl_off_t dlnow,
                        curl_off_t ultotal, curl_off_t ulnow)
{
    (void)clientp;
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return cancelled();
}

/* The calling thread's handle, made on first use, with libcurl's default
 * options (each request resets it when done); NULL when out of memory. */
static CURL *thread_handle(void)
{
    struct thread_handle *h = pthread_getspecific(handle_key);
    if (h)
        return h->c;
    if (!(h = calloc(1, sizeof *h)))
        return NULL;
    h->pid = getpid();
    if (!(h->c = curl.easy_init()) || pthread_setspecific(handle_key, h) != 0) {
        if (h->c)
            curl.easy_cleanup(h->c);
        free(h);
        return NULL;
    }
    pthread_mutex_lock(&handles_mu);
    h->next = handles;
    if (handles)
        handles->prev = h;
    handles = h;
    pthread_mutex_unlock(&handles_mu);
    return h->c;
}

static void load_curl(void)
{
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(curl_load_error, sizeof curl_load_error, "cannot load libcurl: %s",
                 why ? why : "dlopen failed");
        curl_loaded = -1;
        return;
    }
    struct {
        void **slot;
        const char *name;
    } syms[] = {
        {(void **)&curl.global_init, "curl_global_init"},
        {(void **)&curl.easy_init, "curl_easy_init"},
        {(void **)&curl.easy_reset, "curl_easy_reset"},
        {(void **)&curl.easy_setopt, "curl_easy_setopt"},
        {(void **)&curl.easy_perform, "curl_easy_perform"},
        {(void **)&curl.easy_getinfo, "curl_easy_getinfo"},
        {(void **)&curl.easy_cleanup, "curl_easy_cleanup"},
        {(void **)&curl.easy_strerror, "curl_easy_strerror"},
        {(void **)&curl.slist_append, "curl_slist_append"},
        {(void **)&curl.slist_free_all, "curl_slist_free_all"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(curl_load_error, sizeof curl_load_error, "libcurl has no %s",
                     syms[i].name);
            curl_loaded = -1;
            return; /* h stays open: harmless, and a process exits soon after */
        }
    }
    if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(curl_load_error, sizeof curl_load_error, "cannot initialise libcurl");
        curl_loaded = -1;
        return;
    }
    if (pthread_key_create(&handle_key, handle_free) != 0) {
        snprintf(curl_load_error, sizeof curl_load_error, "cannot keep HTTP handles per thread");
        curl_loaded = -1;
        return;
    }
    atexit(release_own_handle);
    curl_loaded = 1;
}

/* Loads libcurl once per process; 0, or TIDE_EIO with err set. */
static int need_curl(struct tide_err *err)
{
    pthread_once(&curl_once, load_curl);
    if (curl_loaded == 1)
        return 0;
    return tide_err_set(err, TIDE_EIO, NULL, "%s", curl_load_error);
}

int http_client_global_init(void)
{
    if (!tls_ca_path && !tls_cert_path)
        return 0; /* libcurl waits for the first https:// request, if any */
    return need_curl(NULL) == 0 ? 0 : TIDE_EIO;
}

/* Checks that path is a readable file holding the PEM block named marker
 * ("CERTIFICATE", "PRIVATE KEY"), so a wrong path fails at start-up with
 * its name rather than later as a handshake error. */
static int check_pem_file(const char *path, const char *marker, const char *field,
                          struct tide_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return tide_err_set(err, TIDE_EINVAL, field, "%s %s: %s", field, path, strerror(errno));
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = !strncmp(line, "-----BEGIN ", 11) && strstr(line, marker) != NULL;
    fclose(f);
    if (!found)
        return tide_err_set(err, TIDE_EINVAL, field, "%s %s: no PEM %s in it", field, path,
                            marker);
    return 0;
}

static int replace_path(char **dst, const char *path)
{
    char *copy = NULL;
    if (path && !(copy = strdup(path)))
        return TIDE_ENOMEM;
    free(*dst);
    *dst = copy;
    return 0;
}

int http_client_set_ca(const char *ca_path, const char *field, struct tide_err *err)
{
    int rc = ca_path ? check_pem_file(ca_path, "CERTIFICATE", field, err) : 0;
    if (!rc && replace_path(&tls_ca_path, ca_path) != 0)
        rc = tide_err_set(err, TIDE_ENOMEM, field, "out of memory");
    return rc;
}

int http_client_set_identity(const char *cert_path, const char *key_path, const char *field,
                             struct tide_err *err)
{
    if (!cert_path != !key_path)
        return tide_err_set(err, TIDE_EINVAL, field,
                            "%s: a client certificate needs both its certificate and its key",
                            field);
    int rc = cert_path ? check_pem_file(cert_path, "CERTIFICATE", field, err) : 0;
    if (!rc && key_path)
        rc = check_pem_file(key_path, "PRIVATE KEY", field, err);
    if (!rc && key_path)
        fs_warn_if_not_private(key_path, "the client key");
    if (!rc && (replace_path(&tls_cert_path, cert_path) || replace_path(&tls_key_path, key_path)))
        rc = tide_err_set(err, TIDE_ENOMEM, field, "out of memory");
    return rc;
}

/* The TLS settings every handle gets: our CA when one was given (peer and
 * host name verification stay on, libcurl's default), our identity when
 * one was given, and a buffer for the handshake's detailed reason. */
static void apply_tls(CURL *c, char *errbuf)
{
    errbuf[0] = '\0';
    curl.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (tls_ca_path) {
        curl.easy_setopt(c, CURLOPT_CAINFO, tls_ca_path);
        curl.easy_setopt(c, CURLOPT_CAPATH, NULL);
    }
    if (tls_cert_path && tls_key_path) {
        curl.easy_setopt(c, CURLOPT_SSLCERT, tls_cert_path);
        curl.easy_setopt(c, CURLOPT_SSLKEY, tls_key_path);
    }
}

/* CURLOPT_SOCKOPTFUNCTION: a kept connection must not leak into the
 * processes the agent starts. */
static int close_on_exec(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
    (void)clientp;
    (void)purpose;
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0)
        fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    return CURL_SOCKOPT_OK;
}

/* CURLOPT_PREREQFUNCTION: the connection is up (new or reused) and the
 * request goes out next. libcurl calls it again when it repeats a request
 * on a new connection because a reused one turned out dead. */
static int count_send(void *clientp, char *primary_ip, char *local_ip, int primary_port,
                      int local_port)
{
    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    if (cancelled())
        return CURL_PREREQFUNC_ABORT;
    (*(int *)clientp)++;
    return CURL_PREREQFUNC_OK;
}

/* What every request sets on the thread's handle: TLS, close-on-exec
 * sockets, and *sends counting the times the request left. Connections
 * are kept only with a libcurl that counts (7.80 and later): a failure to
 * connect after a kept connection died under a request must not read as
 * "nothing was sent" (agent and CLI would send it to another server). */
static void apply_common(CURL *c, int *sends, char *errbuf)
{
    *sends = 0;
    curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, close_on_exec);
    curl.easy_setopt(c, CURLOPT_MAXAGE_CONN, (long)HTTP_PLAIN_KEEP_IDLE_S);
    if (curl.easy_setopt(c, CURLOPT_PREREQFUNCTION, count_send) != CURLE_OK ||
        curl.easy_setopt(c, CURLOPT_PREREQDATA, sends) != CURLE_OK) {
        curl.easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
        curl.easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    }
    if (cancel_flag) {
        curl.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, check_cancel);
        curl.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    }
    apply_tls(c, errbuf);
}

/* curl's detailed reason when it left one, else its generic text. */
static const char *curl_reason(CURLcode rc, const char *errbuf)
{
    return errbuf[0] ? errbuf : curl.easy_strerror(rc);
}

struct body_buffer {
    char *data;
    size_t len, cap;
    int failed;
};

static size_t collect_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct body_buffer *b = userdata;
    size_t n = size * nmemb;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = 1;
            return 0;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

static struct curl_slist *request_headers(const char *token, int json, const char *idem_key)
{
    struct curl_slist *h = NULL;
    if (json)
        h = curl.slist_append(h, "Content-Type: application/json");
    h = curl.slist_append(h, "Expect:");
    if (idem_key) {
        char line[200];
        snprintf(line, sizeof line, "Idempotency-Key: %.128s", idem_key);
        h = curl.slist_append(h, line);
    }
    if (token && *token) {
        size_t n = strlen(token) + 32;
        char *line = malloc(n);
        if (line) {
            snprintf(line, n, "Authorization: Bearer %s", token);
            h = curl.slist_append(h, line);
            free(line);
        }
    }
    return h;
}

/* Whether curl gave up before any of the request could have left: a
 * failure to connect (TLS included) and the request never went out on a
 * connection, not even on a kept one that died under it. */
static int is_unsent(CURLcode rc, int sends)
{
    return sends == 0 && (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_CONNECT ||
           rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION ||
           rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_UNSUPPORTED_PROTOCOL);
}

int http_request(const char *method, const char *url, const char *token, const char *json_body,
                 long timeout_ms, struct http_response *resp, struct tide_err *err)
{
    return http_request_ex(method, url, token, json_body, timeout_ms, NULL, resp, err);
}

int http_request_ex(const char *method, const char *url, const char *token,
                    const char *json_body, long timeout_ms, struct http_request_extra *extra,
                    struct http_response *resp, struct tide_err *err)
{
    memset(resp, 0, sizeof *resp);
    if (extra)
        extra->unsent = 1;
    if (http_plain_handles(url)) {
        struct http_plain_extra x = {.idempotency_key = extra ? extra->idempotency_key : NULL,
                                     .repeatable = extra && extra->repeatable};
        int rc = http_plain_request(method, url, token, json_body, timeout_ms, &x, resp, err);
        if (extra)
            extra->unsent = rc != 0 && x.unsent;
        return rc;
    }
    if (need_curl(err) != 0)
        return TIDE_EIO;
    if (cancelled())
        return tide_err_set(err, TIDE_EIO, NULL, "%s %s: cancelled", method, url);
    CURL *c = thread_handle();
    if (!c)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot create an HTTP handle");
    struct body_buffer b = {0};
    struct curl_slist *headers =
        request_headers(token, json_body != NULL, extra ? extra->idempotency_key : NULL);
    curl.easy_setopt(c, CURLOPT_URL, url);
    curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
    curl.easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000);
    char errbuf[CURL_ERROR_SIZE];
    int sends;
    apply_common(c, &sends, errbuf);
    if (json_body) {
        curl.easy_setopt(c, CURLOPT_POSTFIELDS, json_body);
        curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json_body));
    }
    CURLcode rc = curl.easy_perform(c);
    int ret = 0;
    if (extra)
        extra->unsent = rc != CURLE_OK && is_unsent(rc, sends);
    if (rc != CURLE_OK || b.failed) {
        ret = tide_err_set(err, TIDE_EIO, NULL, "%s %s: %s", method, url,
                           b.failed ? "out of memory" : curl_reason(rc, errbuf));
        free(b.data);
    } else {
        curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
        resp->body = b.data ? b.data : calloc(1, 1);
        resp->len = b.len;
    }
    curl.easy_reset(c); /* drops the pointers into this frame; keeps the connection */
    curl.slist_free_all(headers);
    return ret;
}

struct stream_ctx {
    int (*on_data)(const char *data, size_t len, void *ctx);
    void *ctx;
};

static size_t forward_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct stream_ctx *s = userdata;
    size_t n = size * nmemb;
    return s->on_data(ptr, n, s->ctx) == 0 ? n : 0;
}

int http_stream(const char *url, const char *token, long *status,
                int (*on_data)(const char *data, size_t len, void *ctx), void *ctx,
                struct tide_err *err)
{
    *status = 0;
    if (need_curl(err) != 0)
        return TIDE_EIO;
    if (cancelled())
        return tide_err_set(err, TIDE_EIO, NULL, "GET %s: cancelled", url);
    CURL *c = thread_handle();
    if (!c)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot create an HTTP handle");
    struct stream_ctx s = {on_data, ctx};
    struct curl_slist *headers = request_headers(token, 0, NULL);
    curl.easy_setopt(c, CURLOPT_URL, url);
    curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, forward_body);
    curl.easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    char errbuf[CURL_ERROR_SIZE];
    int sends;
    apply_common(c, &sends, errbuf);
    CURLcode rc = curl.easy_perform(c);
    curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    int ret = 0;
    if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR)
        ret = tide_err_set(err, TIDE_EIO, NULL, "GET %s: %s", url, curl_reason(rc, errbuf));
    curl.easy_reset(c);
    curl.slist_free_all(headers);
    return ret;
}

void http_response_release(struct http_response *resp)
{
    if (!resp)
        return;
    free(resp->body);
    resp->body = NULL;
    resp->len = 0;
}
