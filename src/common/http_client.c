/* libcurl glue for http_client.h. */
#include "common/http_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set once at start-up, before threads; read by every request. */
static char *tls_ca_path, *tls_cert_path, *tls_key_path;

int http_client_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : TIDE_EIO;
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
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (tls_ca_path) {
        curl_easy_setopt(c, CURLOPT_CAINFO, tls_ca_path);
        curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
    }
    if (tls_cert_path && tls_key_path) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, tls_cert_path);
        curl_easy_setopt(c, CURLOPT_SSLKEY, tls_key_path);
    }
}

/* curl's detailed reason when it left one, else its generic text. */
static const char *curl_reason(CURLcode rc, const char *errbuf)
{
    return errbuf[0] ? errbuf : curl_easy_strerror(rc);
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

static struct curl_slist *request_headers(const char *token, int json)
{
    struct curl_slist *h = NULL;
    if (json)
        h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    if (token && *token) {
        size_t n = strlen(token) + 32;
        char *line = malloc(n);
        if (line) {
            snprintf(line, n, "Authorization: Bearer %s", token);
            h = curl_slist_append(h, line);
            free(line);
        }
    }
    return h;
}

int http_request(const char *method, const char *url, const char *token, const char *json_body,
                 long timeout_ms, struct http_response *resp, struct tide_err *err)
{
    memset(resp, 0, sizeof *resp);
    CURL *c = curl_easy_init();
    if (!c)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot create an HTTP handle");
    struct body_buffer b = {0};
    struct curl_slist *headers = request_headers(token, json_body != NULL);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    char errbuf[CURL_ERROR_SIZE];
    apply_tls(c, errbuf);
    if (json_body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json_body));
    }
    CURLcode rc = curl_easy_perform(c);
    int ret = 0;
    if (rc != CURLE_OK || b.failed) {
        ret = tide_err_set(err, TIDE_EIO, NULL, "%s %s: %s", method, url,
                           b.failed ? "out of memory" : curl_reason(rc, errbuf));
        free(b.data);
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
        resp->body = b.data ? b.data : calloc(1, 1);
        resp->len = b.len;
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
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
    CURL *c = curl_easy_init();
    if (!c)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot create an HTTP handle");
    struct stream_ctx s = {on_data, ctx};
    struct curl_slist *headers = request_headers(token, 0);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, forward_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    char errbuf[CURL_ERROR_SIZE];
    apply_tls(c, errbuf);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    int ret = 0;
    if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR)
        ret = tide_err_set(err, TIDE_EIO, NULL, "GET %s: %s", url, curl_reason(rc, errbuf));
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
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
