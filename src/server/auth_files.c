/*
 * The admin and shared join tokens' files, DATA/admin.token and
 * DATA/join.token (mode 0600): made on first start, read back (their
 * hashes stored again) on every later one, and made anew by a rotation,
 * which turns every earlier token of that kind (each HA server's, too)
 * into TOKEN_ROTATED. A file that still holds a rotated-out token (another
 * HA server's, or one restored from a backup) gets a new token at start:
 * storing its hash as valid again would undo the rotation. Both tokens are
 * known to the failed-authentication limit from the start (auth_known.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/sha256.h"
#include "server/server.h"
#include "store/store_tokens.h"

static const char *token_file(enum token_kind kind)
{
    return kind == TOKEN_ADMIN ? "admin.token" : "join.token";
}

static const char *token_name(enum token_kind kind)
{
    return kind == TOKEN_ADMIN ? "admin" : "join";
}

/* DATA/admin.token or DATA/join.token into path. */
static void token_path(const struct server *srv, enum token_kind kind, char path[1024])
{
    snprintf(path, 1024, "%s/%s", srv->cfg.data_dir, token_file(kind));
}

/* Writes token, alone on its line, as the file at path (mode 0600). */
static int write_token_file(const char *path, const char *token, struct tide_err *err)
{
    char line[80];
    int n = snprintf(line, sizeof line, "%s\n", token);
    int rc = fs_write_file_atomic(path, line, (size_t)n, 0600);
    if (rc)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot write %s: %s", path, strerror(-rc));
    return 0;
}

/* The server's own tokens are let through the failed-authentication
 * limit from its start: a local user's 30 bad guesses must not lock the
 * admin on the same host out until the admin's first request passes. */
static void know(struct server *srv, const char *token)
{
    char hash[65];
    sha256_hex(token, strlen(token), hash);
    auth_known_add(&srv->auth_known, hash, clock_now_ms());
}

/* Whether the token of hash was rotated out. */
static bool rotated_out(struct server *srv, const char *hash)
{
    struct token_info info;
    struct tide_err ignored;
    bool rotated =
        store_token_get(srv->store, hash, &info, &ignored) == 0 && info.kind == TOKEN_ROTATED;
    token_info_release(&info);
    return rotated;
}

/* Reads DATA/file if it exists (re-storing its hash, so a database restored
 * from elsewhere still accepts it), else creates it. */
static int bootstrap_one(struct server *srv, enum token_kind kind, struct tide_err *err)
{
    char path[1024];
    token_path(srv, kind, path);
    char *existing = NULL;
    size_t len = 0;
    int rc = fs_read_file(path, 4096, &existing, &len);
    if (rc == 0) {
        while (len && (existing[len - 1] == '\n' || existing[len - 1] == ' '))
            existing[--len] = '\0';
        if (len < 32) {
            free(existing);
            return tide_err_set(err, TIDE_EINVAL, NULL, "%s: token too short", path);
        }
        char hash[65];
        sha256_hex(existing, len, hash);
        if (!rotated_out(srv, hash)) {
            rc = store_token_put(srv->store, hash, kind, token_name(kind), NULL, 0, clock_now_ms(),
                                 err);
            auth_cache_invalidate(&srv->auth_cache);
            if (!rc)
                know(srv, existing);
            free(existing);
            return rc;
        }
        free(existing);
        log_warn("%s holds a token rotated out (tide token rotate %s): writing a new one", path,
                 token_name(kind));
    } else if (rc != -ENOENT) {
        return tide_err_set(err, TIDE_EIO, NULL, "cannot read %s: %s", path, strerror(-rc));
    }
    char token[65];
    rc = auth_issue(srv, kind, token_name(kind), NULL, 0, token, err);
    if (!rc)
        rc = write_token_file(path, token, err);
    if (!rc) {
        know(srv, token);
        log_info("created %s", path);
    }
    return rc;
}

int auth_bootstrap(struct server *srv, struct tide_err *err)
{
    int rc = bootstrap_one(srv, TOKEN_ADMIN, err);
    if (!rc)
        rc = bootstrap_one(srv, TOKEN_JOIN, err);
    return rc;
}

int auth_rotate(struct server *srv, enum token_kind kind, char out[65], int *rotated,
                struct tide_err *file_err, struct tide_err *err)
{
    tide_err_clear(file_err);
    int rc = store_begin(srv->store, err);
    if (rc)
        return rc;
    rc = store_tokens_rotate(srv->store, kind, rotated, err);
    if (!rc)
        rc = auth_issue(srv, kind, token_name(kind), NULL, 0, out, err);
    if (!rc)
        rc = store_commit(srv->store, err);
    else
        store_rollback(srv->store);
    auth_cache_invalidate(&srv->auth_cache); /* the rotated ones, issued or not */
    if (rc)
        return rc;
    know(srv, out);
    log_info("%s token rotated: %d earlier one(s) stop working", token_name(kind), *rotated);
    char path[1024];
    token_path(srv, kind, path);
    if (write_token_file(path, out, file_err))
        log_error("rotated %s token not kept: %s", token_name(kind), file_err->message);
    return 0;
}
