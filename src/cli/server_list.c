/* Parsing and matching the CLI's server URL list (see server_list.h). */
#include "cli/server_list.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void cli_server_list_release(struct cli_server_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++)
        free(list->urls[i]);
    list->n = 0;
}

/* Sets *out to a new normalised copy of the n bytes at s; 0 or an error. */
static int normalise(const char *s, size_t n, const char *field, char **out,
                     struct tide_err *err)
{
    *out = NULL;
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0)
        return tide_err_set(err, TIDE_EINVAL, field, "%s: an empty URL in the list", field);
    const char *sep = memmem(s, n, "://", 3);
    size_t keep = sep ? (size_t)(sep - s) + 3 : 0; /* trailing '/' of the path only */
    while (n > keep && s[n - 1] == '/')
        n--;
    const char *prefix = "";
    if (!sep) {
        prefix = "http://";
    } else {
        size_t slen = (size_t)(sep - s);
        if (!((slen == 4 && !strncasecmp(s, "http", 4)) ||
              (slen == 5 && !strncasecmp(s, "https", 5))))
            return tide_err_set(err, TIDE_EINVAL, field,
                                "%s: '%.*s': only http:// and https:// URLs", field,
                                (int)(n > 200 ? 200 : n), s);
    }
    size_t len = strlen(prefix) + n + 1;
    char *url = malloc(len);
    if (!url)
        return tide_err_set(err, TIDE_ENOMEM, field, "out of memory");
    snprintf(url, len, "%s%.*s", prefix, (int)n, s);
    const char *host = strstr(url, "://") + 3;
    if (!*host || *host == '/' || *host == ':') {
        int rc = tide_err_set(err, TIDE_EINVAL, field, "%s: '%s' names no host", field, url);
        free(url);
        return rc;
    }
    *out = url;
    return 0;
}

int cli_server_list_parse(struct cli_server_list *list, const char *raw, const char *field,
                          struct tide_err *err)
{
    memset(list, 0, sizeof *list);
    const char *p = raw;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (list->n == CLI_SERVERS_MAX) {
            cli_server_list_release(list);
            return tide_err_set(err, TIDE_EINVAL, field, "%s: more than %d URLs", field,
                                CLI_SERVERS_MAX);
        }
        char *url;
        int rc = normalise(p, n, field, &url, err);
        if (rc != 0) {
            cli_server_list_release(list);
            return rc;
        }
        list->urls[list->n++] = url;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

/* Length of the scheme://host[:port] part of a URL. */
static size_t origin_len(const char *url)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    return (size_t)(host - url) + strcspn(host, "/?#");
}

static size_t trimmed_len(const char *url)
{
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    return n;
}

int cli_server_list_find(const struct cli_server_list *list, const char *url)
{
    if (!url || !*url)
        return -1;
    size_t ulen = trimmed_len(url), uorigin = origin_len(url);
    for (size_t i = 0; i < list->n; i++) {
        const char *c = list->urls[i];
        size_t clen = trimmed_len(c), corigin = origin_len(c);
        if (clen != ulen || corigin != uorigin)
            continue;
        if (!strncasecmp(c, url, corigin) && !strncmp(c + corigin, url + corigin, clen - corigin))
            return (int)i;
    }
    return -1;
}
