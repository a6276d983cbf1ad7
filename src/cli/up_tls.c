/* Generating the CA, server and agent certificates with GnuTLS (up_tls.h). */
#include "cli/up_tls.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"

#define UP_TLS_VALID_DAYS 365
#define UP_TLS_RENEW_DAYS 30 /* a set this close to expiry is made anew */

/* One key and certificate being made. */
struct up_tls_pair {
    gnutls_x509_privkey_t key;
    gnutls_x509_crt_t crt;
};

static int tls_fail(struct tide_err *err, const char *step, int rc)
{
    return tide_err_set(err, TIDE_EIO, NULL, "tls: %s: %s", step, gnutls_strerror(rc));
}

static void pair_release(struct up_tls_pair *p)
{
    if (p->crt)
        gnutls_x509_crt_deinit(p->crt);
    if (p->key)
        gnutls_x509_privkey_deinit(p->key);
    memset(p, 0, sizeof *p);
}

/* A fresh P-256 key and a certificate for it with the fields every one of
 * ours has: common name, random serial, valid from an hour ago (clocks
 * differ) for UP_TLS_VALID_DAYS. */
static int pair_start(struct up_tls_pair *p, const char *common_name, struct tide_err *err)
{
    int rc;
    unsigned char serial[16];
    time_t now = time(NULL);
    if ((rc = gnutls_x509_privkey_init(&p->key)) < 0 ||
        (rc = gnutls_x509_privkey_generate(
             p->key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0)
        return tls_fail(err, "generating a key", rc);
    if ((rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial)) < 0)
        return tls_fail(err, "random serial", rc);
    serial[0] &= 0x7f; /* a positive number */
    if ((rc = gnutls_x509_crt_init(&p->crt)) < 0 ||
        (rc = gnutls_x509_crt_set_version(p->crt, 3)) < 0 ||
        (rc = gnutls_x509_crt_set_serial(p->crt, serial, sizeof serial)) < 0 ||
        (rc = gnutls_x509_crt_set_activation_time(p->crt, now - 3600)) < 0 ||
        (rc = gnutls_x509_crt_set_expiration_time(p->crt, now + UP_TLS_VALID_DAYS * 86400L)) < 0 ||
        (rc = gnutls_x509_crt_set_key(p->crt, p->key)) < 0 ||
        (rc = gnutls_x509_crt_set_dn_by_oid(p->crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, "tide up",
                                            strlen("tide up"))) < 0 ||
        (rc = gnutls_x509_crt_set_dn_by_oid(p->crt, GNUTLS_OID_X520_COMMON_NAME, 0, common_name,
                                            strlen(common_name))) < 0)
        return tls_fail(err, "building a certificate", rc);
    unsigned char id[64];
    size_t idlen = sizeof id;
    if ((rc = gnutls_x509_crt_get_key_id(p->crt, GNUTLS_KEYID_USE_SHA1, id, &idlen)) < 0 ||
        (rc = gnutls_x509_crt_set_subject_key_id(p->crt, id, idlen)) < 0)
        return tls_fail(err, "subject key id", rc);
    return 0;
}

static int make_ca(struct up_tls_pair *ca, const char *host, struct tide_err *err)
{
    char cn[128];
    snprintf(cn, sizeof cn, "tide up CA (%.64s)", host);
    int rc = pair_start(ca, cn, err);
    if (rc)
        return rc;
    if ((rc = gnutls_x509_crt_set_basic_constraints(ca->crt, 1, 0)) < 0 ||
        (rc = gnutls_x509_crt_set_key_usage(ca->crt,
                                            GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN)) < 0 ||
        (rc = gnutls_x509_crt_sign2(ca->crt, ca->crt, ca->key, GNUTLS_DIG_SHA256, 0)) < 0)
        return tls_fail(err, "signing the CA", rc);
    return 0;
}

/* A leaf the CA signs: a server certificate for host names (NULL-ended)
 * and 127.0.0.1, or a client certificate when names is NULL. */
static int make_leaf(struct up_tls_pair *leaf, const struct up_tls_pair *ca, const char *cn,
                     const char *const *names, struct tide_err *err)
{
    int rc = pair_start(leaf, cn, err);
    if (rc)
        return rc;
    unsigned char id[64];
    size_t idlen = sizeof id;
    if ((rc = gnutls_x509_crt_set_basic_constraints(leaf->crt, 0, -1)) < 0 ||
        (rc = gnutls_x509_crt_set_key_usage(leaf->crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
        (rc = gnutls_x509_crt_set_key_purpose_oid(
             leaf->crt, names ? GNUTLS_KP_TLS_WWW_SERVER : GNUTLS_KP_TLS_WWW_CLIENT, 0)) < 0 ||
        (rc = gnutls_x509_crt_get_subject_key_id(ca->crt, id, &idlen, NULL)) < 0 ||
        (rc = gnutls_x509_crt_set_authority_key_id(leaf->crt, id, idlen)) < 0)
        return tls_fail(err, "building a certificate", rc);
    for (int i = 0; names && names[i]; i++)
        if ((rc = gnutls_x509_crt_set_subject_alt_name(leaf->crt, GNUTLS_SAN_DNSNAME, names[i],
                                                       (unsigned)strlen(names[i]),
                                                       GNUTLS_FSAN_APPEND)) < 0)
            return tls_fail(err, "subject alternative name", rc);
    if (names) {
        unsigned char loop4[4] = {127, 0, 0, 1};
        if ((rc = gnutls_x509_crt_set_subject_alt_name(leaf->crt, GNUTLS_SAN_IPADDRESS, loop4,
                                                       sizeof loop4, GNUTLS_FSAN_APPEND)) < 0)
            return tls_fail(err, "subject alternative name", rc);
    }
    if ((rc = gnutls_x509_crt_sign2(leaf->crt, ca->crt, ca->key, GNUTLS_DIG_SHA256, 0)) < 0)
        return tls_fail(err, "signing a certificate", rc);
    return 0;
}

static int write_pem(const char *dir, const char *name, const gnutls_datum_t *d, mode_t mode,
                     struct tide_err *err)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return tide_err_set(err, TIDE_EINVAL, NULL, "%s: path too long", dir);
    int rc = fs_write_file_atomic(path, (const char *)d->data, d->size, mode);
    if (rc < 0)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot write %s: %s", path, strerror(-rc));
    return 0;
}

/* Writes a pair as NAME.crt (0644) and NAME.key (0600). */
static int write_pair(const char *dir, const char *crt_name, const char *key_name,
                      const struct up_tls_pair *p, struct tide_err *err)
{
    gnutls_datum_t crt = {NULL, 0}, key = {NULL, 0};
    int rc = gnutls_x509_crt_export2(p->crt, GNUTLS_X509_FMT_PEM, &crt);
    if (rc >= 0)
        rc = gnutls_x509_privkey_export2(p->key, GNUTLS_X509_FMT_PEM, &key);
    if (rc < 0)
        rc = tls_fail(err, "exporting PEM", rc);
    else if ((rc = write_pem(dir, key_name, &key, 0600, err)) == 0)
        rc = write_pem(dir, crt_name, &crt, 0644, err);
    if (key.data)
        gnutls_memset(key.data, 0, key.size);
    gnutls_free(key.data);
    gnutls_free(crt.data);
    return rc;
}

/* Whether the certificate file at path is readable and valid past when. */
static bool valid_past(const char *path, time_t when)
{
    gnutls_datum_t pem = {NULL, 0};
    gnutls_x509_crt_t crt;
    if (gnutls_load_file(path, &pem) < 0)
        return false;
    bool ok = false;
    if (gnutls_x509_crt_init(&crt) == 0) {
        time_t expires = gnutls_x509_crt_import(crt, &pem, GNUTLS_X509_FMT_PEM) == 0
                             ? gnutls_x509_crt_get_expiration_time(crt)
                             : (time_t)-1;
        ok = expires != (time_t)-1 && expires > when;
        gnutls_x509_crt_deinit(crt);
    }
    gnutls_free(pem.data);
    return ok;
}

/* Whether dir holds the whole set, none of it expiring within
 * UP_TLS_RENEW_DAYS of now: a year on, the same set would stop every
 * handshake ("certificate has expired"). */
static int set_usable(const char *dir, time_t now)
{
    static const char *const names[] = {UP_TLS_CA,         UP_TLS_CA_KEY,     UP_TLS_SERVER_CERT,
                                        UP_TLS_SERVER_KEY, UP_TLS_AGENT_CERT, UP_TLS_AGENT_KEY};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path ||
            access(path, R_OK) != 0)
            return 0;
        if (strstr(names[i], ".crt") && !valid_past(path, now + UP_TLS_RENEW_DAYS * 86400L))
            return 0;
    }
    return 1;
}

int up_tls_ensure(const char *dir, int *created, struct tide_err *err)
{
    return up_tls_ensure_at(dir, time(NULL), created, err);
}

int up_tls_ensure_at(const char *dir, time_t now, int *created, struct tide_err *err)
{
    *created = 0;
    if (set_usable(dir, now))
        return 0;
    char host[256] = "localhost";
    if (gethostname(host, sizeof host) != 0 || !*host)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    const char *names[] = {"localhost", host, NULL};
    if (!strcmp(host, "localhost"))
        names[1] = NULL;
    struct up_tls_pair ca = {0}, server = {0}, agent = {0};
    int rc = make_ca(&ca, host, err);
    if (!rc)
        rc = make_leaf(&server, &ca, host, names, err);
    if (!rc)
        rc = make_leaf(&agent, &ca, "tide agent", NULL, err);
    if (!rc)
        rc = write_pair(dir, UP_TLS_SERVER_CERT, UP_TLS_SERVER_KEY, &server, err);
    if (!rc)
        rc = write_pair(dir, UP_TLS_AGENT_CERT, UP_TLS_AGENT_KEY, &agent, err);
    /* The CA last: its presence with the rest is what says "complete". */
    if (!rc)
        rc = write_pair(dir, UP_TLS_CA, UP_TLS_CA_KEY, &ca, err);
    pair_release(&agent);
    pair_release(&server);
    pair_release(&ca);
    *created = rc == 0;
    return rc;
}
