/* libcurl glue for http_client.h. */
#include "common/http_client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int http_client_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : TIDE_EIO;
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
    if (json_body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json_body));
    }
    CURLcode rc = curl_easy_perform(c);
    int ret = 0;
    if (rc != CURLE_OK || b.failed) {
        ret = tide_err_set(err, TIDE_EIO, NULL, "%s %s: %s", method, url,
                           b.failed ? "out of memory" : curl_easy_strerror(rc));
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
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    int ret = 0;
    if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR)
        ret = tide_err_set(err, TIDE_EIO, NULL, "GET %s: %s", url, curl_easy_strerror(rc));
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
