/*
 * The CLI's connection to a tide server: where it is and which token to
 * send, resolved from flags, the environment, ~/.config/tide/config and the
 * files `tide up` leaves under ./.tide/, and one call that turns the
 * server's error bodies into a struct tide_err a person can read.
 */
#ifndef TIDE_CLI_CLIENT_H
#define TIDE_CLI_CLIENT_H

#include <jansson.h>

#include "cli/server_list.h"
#include "common/http_client.h"
#include "common/tide_err.h"

#define CLI_DEFAULT_SERVER "http://127.0.0.1:8080"
#define CLI_TIMEOUT_MS 30000L

/* The common options as given on the command line (NULL when absent). */
struct cli_common {
    const char *server;
    const char *token;
    const char *ca; /* --ca FILE */
    const char *token_file; /* --token-file PATH */
    int json;
    int help;
};

/* Records a common option (an id from CLI_COMMON_OPTS in args.h) in co.
 * Returns 1 when id was one of them, 0 otherwise. */
int cli_common_apply(struct cli_common *co, int id, const char *value);

struct cli_client {
    const char *server;      /* the server requests go to first: the one that
                              * answered last (one of servers.urls) */
    struct cli_server_list servers; /* every configured URL, in order */
    size_t current;          /* index of server in servers.urls */
    char *token;             /* NULL when none was found */
    const char *server_from; /* where server came from, for messages */
    const char *token_from;
    char *ca;            /* PEM CA for an https server; NULL: the system's CAs */
    const char *ca_from; /* where ca came from, for messages */
    int json; /* --json: print the API's JSON instead of tables */
};

/* Resolves server and token. Server: --server, $TIDE_SERVER, server= in
 * $XDG_CONFIG_HOME/tide/config (or ~/.config/tide/config),
 * ./.tide/server.url, CLI_DEFAULT_SERVER; each may be a comma-separated
 * list of URLs (see cli_client_send); a bad list is a TIDE_EINVAL naming
 * where it came from. Token: --token, $TIDE_TOKEN,
 * token= in that config, then ./.tide/data/admin.token but only when every
 * server is on loopback, so a local admin token never travels elsewhere.
 * CA for an https server: --ca, $TIDE_CA, ca= in that config, then
 * ./.tide/tls/ca.crt when the server came from ./.tide/server.url; a CA
 * file that cannot be read is a TIDE_EINVAL naming where it came from.
 * Release with cli_client_release. */
int cli_client_init(struct cli_client *c, const struct cli_common *co, struct tide_err *err);

/* Frees what cli_client_init allocated; accepts a zeroed client. */
void cli_client_release(struct cli_client *c);

/* Sends method to the server's path ("/v1/jobs?...") with an optional JSON
 * body. On a 2xx answer fills resp (release with http_response_release) and
 * returns 0. Otherwise resp is released and the return is a negative code:
 * TIDE_EIO with a "cannot reach" message when no answer came, or the code
 * matching the HTTP status with the server's error.message (prefixed by
 * error.field) in err->message and the field in err->field.
 *
 * With several servers: the request goes to c->server first. When it
 * cannot connect there, or the request is safe to repeat (GET, DELETE, or
 * an idempotency_key is given) and the answer was lost, the next URL in the
 * list is tried. A 503 "not the leader" moves to the leader it names when
 * that URL is in the list (once per URL; a hint elsewhere is never
 * followed, so the token does not travel there), else to the next URL.
 * After one round the error lists what each URL answered. The server that
 * answered becomes c->server. http:// goes over common/http_plain.h, https://
 * over libcurl. idempotency_key (NULL for none) is sent as Idempotency-Key. */
int cli_client_send(struct cli_client *c, const char *method, const char *path,
                    const char *body, const char *idempotency_key, long timeout_ms,
                    struct http_response *resp, struct tide_err *err);

/* cli_client_send without an idempotency key. */
int cli_client_request(struct cli_client *c, const char *method, const char *path,
                       const char *body, long timeout_ms, struct http_response *resp,
                       struct tide_err *err);

/* Fills key (at least CLI_IDEMPOTENCY_KEY_SIZE bytes) with a new random
 * Idempotency-Key: one per submission, the same for its retries. */
#define CLI_IDEMPOTENCY_KEY_SIZE 48
void cli_idempotency_key_new(char *key);

/* cli_client_request, then parses the answer as a JSON object or array into
 * *out (a new reference the caller releases). */
int cli_client_request_json(struct cli_client *c, const char *method, const char *path,
                            const char *body, json_t **out, struct tide_err *err);

/* cli_client_request_json with an Idempotency-Key (NULL for none). */
int cli_client_request_json_keyed(struct cli_client *c, const char *method, const char *path,
                                  const char *body, const char *idempotency_key, json_t **out,
                                  struct tide_err *err);

/* Turns a non-2xx answer into err (used for streamed answers too). */
int cli_client_http_error(struct cli_client *c, long status, const char *body,
                          struct tide_err *err);

/* Builds a new string path?k1=v1&k2=v2 from NULL-terminated key/value pairs,
 * skipping pairs whose value is NULL and percent-encoding values. The caller
 * frees it; NULL when out of memory. */
char *cli_path_with_query(const char *path, const char *const *pairs);

#endif
