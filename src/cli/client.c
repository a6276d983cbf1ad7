/* Finding the server and token, and the REST API's errors and JSON (see client.h;
 * sending through the server list is client_send.c). */
#include "cli/client.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "common/fsutil.h"

#define CLI_SMALL_FILE_MAX (64 * 1024)

int cli_common_apply(struct cli_common *co, int id, const char *value)
{
    switch (id) {
    case CLI_ID_SERVER: co->server = value; return 1;
    case CLI_ID_TOKEN: co->token = value; return 1;
    case CLI_ID_CA: co->ca = value; return 1;
    case CLI_ID_TOKEN_FILE: co->token_file = value; return 1;
    case CLI_ID_JSON: co->json = 1; return 1;
    case CLI_ID_HELP: co->help = 1; return 1;
    default: return 0;
    }
}

/* Returns a new copy of s without surrounding whitespace. */
static char *strdup_trimmed(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    return strndup(s, n);
}

/* Reads a whole small file, trimmed; NULL when absent, unreadable or empty. */
static char *read_trimmed_file(const char *path)
{
    char *data;
    size_t len;
    if (fs_read_file(path, CLI_SMALL_FILE_MAX, &data, &len) != 0)
        return NULL;
    char *out = strdup_trimmed(data, len);
    free(data);
    if (out && !*out) {
        free(out);
        out = NULL;
    }
    return out;
}

/* Looks up key= in the user's config file; a new string or NULL. */
static char *config_value(const char *key)
{
    char path[4096];
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && *xdg)
        n = snprintf(path, sizeof path, "%s/tide/config", xdg);
    else if (home && *home)
        n = snprintf(path, sizeof path, "%s/.config/tide/config", home);
    else
        return NULL;
    if (n < 0 || (size_t)n >= sizeof path)
        return NULL;
    char *data;
    if (fs_read_file(path, CLI_SMALL_FILE_MAX, &data, NULL) != 0)
        return NULL;
    char *found = NULL;
    size_t klen = strlen(key);
    for (char *line = data; line && *line && !found;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        while (len && isspace((unsigned char)*line)) {
            line++;
            len--;
        }
        if (len > klen && !strncmp(line, key, klen)) {
            const char *rest = line + klen;
            size_t rlen = len - klen;
            while (rlen && (*rest == ' ' || *rest == '\t')) {
                rest++;
                rlen--;
            }
            if (rlen && *rest == '=')
                found = strdup_trimmed(rest + 1, rlen - 1);
        }
        line = end ? end + 1 : NULL;
    }
    free(data);
    return found;
}

static int is_loopback_url(const char *url)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    static const char *const names[] = {"127.0.0.1", "localhost", "[::1]", NULL};
    for (int i = 0; names[i]; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(host, names[i], n) && (host[n] == '\0' || host[n] == ':' || host[n] == '/'))
            return 1;
    }
    return 0;
}

static int resolve_server(struct cli_client *c, const struct cli_common *co,
                          struct tide_err *err)
{
    char *raw = NULL;
    const char *env = getenv("TIDE_SERVER");
    if (co->server) {
        raw = strdup(co->server);
        c->server_from = "--server";
    } else if (env && *env) {
        raw = strdup(env);
        c->server_from = "TIDE_SERVER";
    } else if ((raw = config_value("server"))) {
        c->server_from = "~/.config/tide/config";
    } else if ((raw = read_trimmed_file(".tide/server.url"))) {
        c->server_from = ".tide/server.url";
    } else {
        raw = strdup(CLI_DEFAULT_SERVER);
        c->server_from = "the default";
    }
    if (!raw)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    /* "127.0.0.1:8080" means plain HTTP (cli_server_list_parse). */
    int rc = cli_server_list_parse(&c->servers, raw, c->server_from, err);
    free(raw);
    if (rc != 0)
        return rc;
    c->current = 0;
    c->server = c->servers.urls[0];
    return 0;
}

/* Whether every configured server is on this machine. */
static int all_loopback(const struct cli_client *c)
{
    for (size_t i = 0; i < c->servers.n; i++)
        if (!is_loopback_url(c->servers.urls[i]))
            return 0;
    return c->servers.n > 0;
}

static void resolve_token(struct cli_client *c, const struct cli_common *co)
{
    const char *env = getenv("TIDE_TOKEN");
    if (co->token) {
        c->token = strdup(co->token);
        c->token_from = "--token";
        cli_scrub_secret("tide", "--token", co->token);
    } else if (co->token_file) {
        c->token = read_trimmed_file(co->token_file);
        c->token_from = co->token_file;
    } else if (env && *env) {
        c->token = strdup(env);
        c->token_from = "TIDE_TOKEN";
    } else if ((c->token = config_value("token"))) {
        c->token_from = "~/.config/tide/config";
    } else if (all_loopback(c) && (c->token = read_trimmed_file(".tide/data/admin.token"))) {
        c->token_from = ".tide/data/admin.token";
    } else {
        c->token_from = "nowhere";
    }
}

static void resolve_ca(struct cli_client *c, const struct cli_common *co)
{
    const char *env = getenv("TIDE_CA");
    if (co->ca) {
        c->ca = strdup(co->ca);
        c->ca_from = "--ca";
    } else if (env && *env) {
        c->ca = strdup(env);
        c->ca_from = "TIDE_CA";
    } else if ((c->ca = config_value("ca"))) {
        c->ca_from = "ca= in ~/.config/tide/config";
    } else if (!strcmp(c->server_from, ".tide/server.url") &&
               access(".tide/tls/ca.crt", R_OK) == 0) {
        c->ca = strdup(".tide/tls/ca.crt");
        c->ca_from = ".tide/tls/ca.crt";
    }
}

int cli_client_init(struct cli_client *c, const struct cli_common *co, struct tide_err *err)
{
    memset(c, 0, sizeof *c);
    c->json = co->json;
    int rc = resolve_server(c, co, err);
    if (rc != 0)
        return rc;
    resolve_token(c, co);
    resolve_ca(c, co);
    if (c->ca && http_client_set_ca(c->ca, c->ca_from, err) != 0) {
        cli_client_release(c); /* callers release only a client that initialised */
        return TIDE_EINVAL;
    }
    return 0;
}

void cli_client_release(struct cli_client *c)
{
    if (!c)
        return;
    cli_server_list_release(&c->servers);
    free(c->token);
    free(c->ca);
    c->server = NULL;
    c->token = c->ca = NULL;
}

static int code_for_status(long status)
{
    switch (status) {
    case 400: return TIDE_EINVAL;
    case 401: return TIDE_EAUTH;
    case 403: return TIDE_EPERM;
    case 404: return TIDE_ENOENT;
    case 409: return TIDE_ECONFLICT;
    case 413: return TIDE_ETOOBIG;
    default: return TIDE_EIO;
    }
}

int cli_client_http_error(struct cli_client *c, long status, const char *body,
                          struct tide_err *err)
{
    int code = code_for_status(status);
    json_t *root = body ? json_loads(body, 0, NULL) : NULL;
    const char *message = NULL, *field = NULL;
    json_t *e = json_object_get(root, "error");
    if (json_is_object(e)) {
        message = json_string_value(json_object_get(e, "message"));
        field = json_string_value(json_object_get(e, "field"));
    }
    char text[300];
    if (message && field && *field && strncmp(message, field, strlen(field)) != 0)
        snprintf(text, sizeof text, "%s: %s", field, message);
    else if (message)
        snprintf(text, sizeof text, "%s", message);
    else if (body && *body)
        snprintf(text, sizeof text, "HTTP %ld: %.200s", status, body);
    else
        snprintf(text, sizeof text, "HTTP %ld", status);
    /* A trailing newline from a plain-text body would end up mid-line. */
    size_t n = strlen(text);
    while (n && isspace((unsigned char)text[n - 1]))
        text[--n] = '\0';
    if (code == TIDE_EAUTH && !c->token)
        tide_err_set(err, code, field, "%s (no token found: pass --token, set TIDE_TOKEN or add "
                                       "token= to ~/.config/tide/config)", text);
    else if (code == TIDE_EAUTH)
        tide_err_set(err, code, field, "%s (token from %s)", text, c->token_from);
    else
        tide_err_set(err, code, field, "%s", text);
    json_decref(root);
    return code;
}

int cli_client_request_json(struct cli_client *c, const char *method, const char *path,
                            const char *body, json_t **out, struct tide_err *err)
{
    return cli_client_request_json_keyed(c, method, path, body, NULL, out, err);
}

int cli_client_request_json_keyed(struct cli_client *c, const char *method, const char *path,
                                  const char *body, const char *idempotency_key, json_t **out,
                                  struct tide_err *err)
{
    *out = NULL;
    struct http_response resp;
    int rc = cli_client_send(c, method, path, body, idempotency_key, CLI_TIMEOUT_MS, &resp, err);
    if (rc < 0)
        return rc;
    json_error_t jerr;
    *out = json_loadb(resp.body, resp.len, 0, &jerr);
    http_response_release(&resp);
    if (!*out)
        return tide_err_set(err, TIDE_EIO, NULL, "the server's answer to %s %s is not JSON: %s",
                            method, path, jerr.text);
    return 0;
}

static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (isalnum(ch) || strchr("-._~", ch))
            fputc(ch, f);
        else
            fprintf(f, "%%%02X", ch);
    }
}

char *cli_path_with_query(const char *path, const char *const *pairs)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    fputs(path, f);
    char sep = '?';
    for (; pairs[0]; pairs += 2) {
        if (!pairs[1])
            continue;
        fprintf(f, "%c%s=", sep, pairs[0]);
        put_escaped(f, pairs[1]);
        sep = '&';
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}
