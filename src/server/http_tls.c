/* Loading and checking the server's TLS settings (http_tls.h). */
#include "server/http_tls.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "server/server.h"

#define TLS_PEM_MAX (1 << 20)

bool http_tls_is_loopback(const char *host)
{
    struct in_addr a;
    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* Reads path (named by option in errors) and checks it holds the PEM block
 * marker. */
static int read_pem(const char *option, const char *path, const char *marker, char **out,
                    struct tide_err *err)
{
    size_t len = 0;
    int rc = fs_read_file(path, TLS_PEM_MAX, out, &len);
    if (rc)
        return tide_err_set(err, TIDE_EINVAL, option, "%s %s: cannot read: %s", option, path,
                            strerror(-rc));
    const char *begin = strstr(*out, "-----BEGIN ");
    const char *eol = begin ? strchr(begin, '\n') : NULL;
    const char *found = begin ? strstr(begin, marker) : NULL;
    if (!found || (eol && found > eol)) {
        free(*out);
        *out = NULL;
        return tide_err_set(err, TIDE_EINVAL, option, "%s %s: no PEM %s in it", option, path,
                            marker);
    }
    return 0;
}

/* Loads the files the way libmicrohttpd will, so that a key that does not
 * match its certificate, or a PEM file GnuTLS cannot parse, is refused
 * here with GnuTLS's reason and the file's name. */
static int check_with_gnutls(const struct server_config *cfg, const struct http_tls *t,
                             struct tide_err *err)
{
    gnutls_certificate_credentials_t cred;
    if (gnutls_certificate_allocate_credentials(&cred) < 0)
        return tide_err_set(err, TIDE_ENOMEM, "tls_cert", "out of memory");
    gnutls_datum_t cert = {(unsigned char *)t->cert, (unsigned)strlen(t->cert)};
    gnutls_datum_t key = {(unsigned char *)t->key, (unsigned)strlen(t->key)};
    int rc = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM);
    if (rc < 0)
        rc = tide_err_set(err, TIDE_EINVAL, "tls_cert", "--tls-cert %s with --tls-key %s: %s",
                          cfg->tls_cert, cfg->tls_key, gnutls_strerror(rc));
    else
        rc = 0;
    if (!rc && t->client_ca) {
        gnutls_datum_t ca = {(unsigned char *)t->client_ca, (unsigned)strlen(t->client_ca)};
        int n = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
        if (n <= 0)
            rc = tide_err_set(err, TIDE_EINVAL, "tls_client_ca", "--tls-client-ca %s: %s",
                              cfg->tls_client_ca,
                              n < 0 ? gnutls_strerror(n) : "no certificate GnuTLS can read");
    }
    gnutls_certificate_free_credentials(cred);
    return rc;
}

int http_tls_load(const struct server_config *cfg, struct http_tls *t, struct tide_err *err)
{
    memset(t, 0, sizeof *t);
    bool cert = cfg->tls_cert[0], key = cfg->tls_key[0];
    if (cert != key)
        return tide_err_set(err, TIDE_EINVAL, cert ? "tls_key" : "tls_cert",
                            "%s given without %s: HTTPS needs both the certificate and its key",
                            cert ? "--tls-cert" : "--tls-key", cert ? "--tls-key" : "--tls-cert");
    if (!cert && cfg->tls_client_ca[0])
        return tide_err_set(err, TIDE_EINVAL, "tls_client_ca",
                            "--tls-client-ca needs HTTPS: give --tls-cert and --tls-key too");
    if (cfg->tls_client_cn_is_node && !cfg->tls_client_ca[0])
        return tide_err_set(err, TIDE_EINVAL, "tls_client_cn_is_node",
                            "--tls-client-cn-is-node needs client certificates: give "
                            "--tls-client-ca too");
    if (!cert && !cfg->insecure_plain_http && !http_tls_is_loopback(cfg->listen_host))
        return tide_err_set(err, TIDE_EINVAL, "listen",
                            "refusing plain HTTP on %s: tokens and job commands would cross the "
                            "network in clear text; give --tls-cert and --tls-key (or "
                            "--insecure-plain-http to accept that, e.g. behind a TLS proxy)",
                            cfg->listen_host);
    if (!cert && !cfg->insecure_plain_http && cfg->agent_listen &&
        !http_tls_is_loopback(cfg->agent_listen_host))
        return tide_err_set(err, TIDE_EINVAL, "agent_listen",
                            "refusing plain HTTP on %s (agent_listen): tokens and job commands "
                            "would cross the network in clear text; give --tls-cert and "
                            "--tls-key (or --insecure-plain-http)",
                            cfg->agent_listen_host);
    if (!cert)
        return 0;
    int rc = read_pem("--tls-cert", cfg->tls_cert, "CERTIFICATE", &t->cert, err);
    if (!rc)
        rc = read_pem("--tls-key", cfg->tls_key, "PRIVATE KEY", &t->key, err);
    if (!rc)
        fs_warn_if_not_private(cfg->tls_key, "--tls-key");
    if (!rc && cfg->tls_client_ca[0])
        rc = read_pem("--tls-client-ca", cfg->tls_client_ca, "CERTIFICATE", &t->client_ca, err);
    if (!rc)
        rc = check_with_gnutls(cfg, t, err);
    if (rc)
        http_tls_release(t);
    return rc;
}

void http_tls_release(struct http_tls *t)
{
    if (!t)
        return;
    if (t->key) {
        volatile char *p = t->key;
        while (*p)
            *p++ = '\0';
    }
    free(t->cert);
    free(t->key);
    free(t->client_ca);
    memset(t, 0, sizeof *t);
}

int http_tls_check_client(struct MHD_Connection *conn, struct tide_err *err)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!info || !info->tls_session)
        return tide_err_set(err, TIDE_EAUTH, "client_certificate",
                            "this server requires agents to use TLS with a client certificate");
    gnutls_session_t session = (gnutls_session_t)info->tls_session;
    unsigned npeers = 0;
    if (!gnutls_certificate_get_peers(session, &npeers) || npeers == 0)
        return tide_err_set(err, TIDE_EAUTH, "client_certificate",
                            "this server requires a client certificate on the agent protocol "
                            "(tide agent --tls-cert/--tls-key)");
    unsigned status = 0;
    /* signed by the CA is not enough: a web server's certificate from the
     * same CA (its key purpose serverAuth only) is no agent's */
    gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                     .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};
    int rc = gnutls_certificate_verify_peers(session, &purpose, 1, &status);
    if (rc < 0)
        return tide_err_set(err, TIDE_EAUTH, "client_certificate",
                            "cannot verify the client certificate: %s", gnutls_strerror(rc));
    if (status) {
        gnutls_datum_t why = {NULL, 0};
        gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
        tide_err_set(err, TIDE_EAUTH, "client_certificate", "client certificate refused: %s",
                     why.data ? (const char *)why.data : "not trusted");
        gnutls_free(why.data);
        return TIDE_EAUTH;
    }
    return 0;
}

int http_tls_client_name_is(struct MHD_Connection *conn, const char *name, struct tide_err *err)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    unsigned npeers = 0;
    const gnutls_datum_t *peers =
        info && info->tls_session
            ? gnutls_certificate_get_peers((gnutls_session_t)info->tls_session, &npeers)
            : NULL;
    if (!peers || npeers == 0)
        return tide_err_set(err, TIDE_EAUTH, "client_certificate",
                            "this server requires a client certificate on the agent protocol");
    gnutls_x509_crt_t crt;
    char cn[256] = "";
    size_t size = sizeof cn;
    int rc = gnutls_x509_crt_init(&crt);
    if (rc >= 0) {
        rc = gnutls_x509_crt_import(crt, &peers[0], GNUTLS_X509_FMT_DER);
        if (rc >= 0)
            rc = gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &size);
        gnutls_x509_crt_deinit(crt);
    }
    if (rc < 0)
        return tide_err_set(err, TIDE_EPERM, "client_certificate",
                            "the client certificate names no node (no common name: %s); this "
                            "server wants its CN to be the node's name",
                            gnutls_strerror(rc));
    if (strlen(cn) != size || strcmp(cn, name) != 0)
        return tide_err_set(err, TIDE_EPERM, "client_certificate",
                            "the client certificate is for '%.64s' (its CN), not for node '%s'",
                            cn, name);
    return 0;
}
