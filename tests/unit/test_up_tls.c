/* Unit tests for the certificates `tide up --tls` makes (src/cli/up_tls.c),
 * checked with GnuTLS's own verifier: the chain, the names, the purposes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/up_tls.h"
#include "common/fsutil.h"

static char dir[] = "/tmp/tide-test-up-tls-XXXXXX";

static void path_of(char *buf, const char *name)
{
    snprintf(buf, PATH_MAX, "%s/%s", dir, name);
}

static gnutls_x509_crt_t load_crt(const char *name)
{
    char path[PATH_MAX];
    path_of(path, name);
    gnutls_datum_t d = {NULL, 0};
    assert_int_equal(gnutls_load_file(path, &d), 0);
    gnutls_x509_crt_t crt;
    assert_int_equal(gnutls_x509_crt_init(&crt), 0);
    assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0);
    gnutls_free(d.data);
    return crt;
}

/* Verifies leaf against the CA alone, for the given key purpose. */
static unsigned verify(gnutls_x509_crt_t ca, gnutls_x509_crt_t leaf, const char *purpose)
{
    gnutls_x509_trust_list_t tl;
    assert_int_equal(gnutls_x509_trust_list_init(&tl, 0), 0);
    assert_int_equal(gnutls_x509_trust_list_add_cas(tl, &ca, 1, GNUTLS_TL_NO_DUPLICATES), 1);
    gnutls_typed_vdata_st data = {GNUTLS_DT_KEY_PURPOSE_OID, (unsigned char *)purpose, 0};
    unsigned status = 0xffff;
    assert_int_equal(gnutls_x509_trust_list_verify_crt2(tl, &leaf, 1, &data, 1, 0, &status, NULL),
                     0);
    /* The list does not own ca (no GNUTLS_TL_* ownership flag given at deinit). */
    gnutls_x509_trust_list_deinit(tl, 0);
    return status;
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    static const char *const names[] = {UP_TLS_CA,         UP_TLS_CA_KEY,     UP_TLS_SERVER_CERT,
                                        UP_TLS_SERVER_KEY, UP_TLS_AGENT_CERT, UP_TLS_AGENT_KEY};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        path_of(path, names[i]);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}

static void test_server_certificate_is_signed_by_the_ca_for_localhost_and_127_0_0_1(void **state)
{
    (void)state;
    struct tide_err err = {0};
    int created = 0;
    assert_int_equal(up_tls_ensure(dir, &created, &err), 0);
    assert_int_equal(created, 1);
    gnutls_x509_crt_t ca = load_crt(UP_TLS_CA), server = load_crt(UP_TLS_SERVER_CERT);
    assert_int_equal(verify(ca, server, GNUTLS_KP_TLS_WWW_SERVER), 0);
    assert_true(gnutls_x509_crt_check_hostname(server, "localhost"));
    assert_true(gnutls_x509_crt_check_hostname(server, "127.0.0.1"));
    assert_false(gnutls_x509_crt_check_hostname(server, "127.0.0.2"));
    assert_false(gnutls_x509_crt_check_hostname(server, "example.com"));
    /* The server certificate cannot sign others. */
    unsigned ca_flag = 1;
    assert_true(gnutls_x509_crt_get_basic_constraints(server, NULL, &ca_flag, NULL) >= 0);
    assert_int_equal(ca_flag, 0);
    gnutls_x509_crt_deinit(server);
    gnutls_x509_crt_deinit(ca);
}

static void test_agent_certificate_is_for_clients_only(void **state)
{
    (void)state;
    struct tide_err err = {0};
    int created = 0;
    assert_int_equal(up_tls_ensure(dir, &created, &err), 0);
    gnutls_x509_crt_t ca = load_crt(UP_TLS_CA), agent = load_crt(UP_TLS_AGENT_CERT);
    assert_int_equal(verify(ca, agent, GNUTLS_KP_TLS_WWW_CLIENT), 0);
    assert_int_not_equal(verify(ca, agent, GNUTLS_KP_TLS_WWW_SERVER), 0);
    gnutls_x509_crt_deinit(agent);
    gnutls_x509_crt_deinit(ca);
}

static void test_keys_are_private_and_a_second_run_keeps_the_ca(void **state)
{
    (void)state;
    struct tide_err err = {0};
    int created = 0;
    char path[PATH_MAX], *before = NULL, *after = NULL;
    assert_int_equal(up_tls_ensure(dir, &created, &err), 0);
    static const char *const keys[] = {UP_TLS_CA_KEY, UP_TLS_SERVER_KEY, UP_TLS_AGENT_KEY};
    for (size_t i = 0; i < 3; i++) {
        struct stat st;
        path_of(path, keys[i]);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
    }
    path_of(path, UP_TLS_CA);
    assert_int_equal(fs_read_file(path, 1 << 16, &before, NULL), 0);
    assert_int_equal(up_tls_ensure(dir, &created, &err), 0);
    assert_int_equal(created, 0);
    assert_int_equal(fs_read_file(path, 1 << 16, &after, NULL), 0);
    assert_string_equal(before, after);
    /* A set with a file missing is made again, CA included. */
    path_of(path, UP_TLS_AGENT_KEY);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(up_tls_ensure(dir, &created, &err), 0);
    assert_int_equal(created, 1);
    free(after);
    path_of(path, UP_TLS_CA);
    assert_int_equal(fs_read_file(path, 1 << 16, &after, NULL), 0);
    assert_string_not_equal(before, after);
    free(before);
    free(after);
}

static void test_a_set_close_to_its_expiry_is_made_anew(void **state)
{
    (void)state;
    struct tide_err err = {0};
    int created = 0;
    char path[PATH_MAX], *before = NULL, *after = NULL;
    time_t now = time(NULL);
    assert_int_equal(up_tls_ensure_at(dir, now, &created, &err), 0);
    path_of(path, UP_TLS_CA);
    assert_int_equal(fs_read_file(path, 1 << 16, &before, NULL), 0);
    /* 300 days on: kept; 340 days on (25 days left): a new set */
    assert_int_equal(up_tls_ensure_at(dir, now + 300 * 86400L, &created, &err), 0);
    assert_int_equal(created, 0);
    assert_int_equal(up_tls_ensure_at(dir, now + 340 * 86400L, &created, &err), 0);
    assert_int_equal(created, 1);
    assert_int_equal(fs_read_file(path, 1 << 16, &after, NULL), 0);
    assert_string_not_equal(before, after);
    free(before);
    free(after);
}

static void test_a_directory_that_cannot_be_written_is_an_error_naming_the_file(void **state)
{
    (void)state;
    struct tide_err err = {0};
    int created = 1;
    assert_int_equal(up_tls_ensure("/nonexistent/tide-tls", &created, &err), TIDE_EIO);
    assert_int_equal(created, 0);
    assert_non_null(strstr(err.message, "/nonexistent/tide-tls/"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_certificate_is_signed_by_the_ca_for_localhost_and_127_0_0_1),
        cmocka_unit_test(test_agent_certificate_is_for_clients_only),
        cmocka_unit_test(test_keys_are_private_and_a_second_run_keeps_the_ca),
        cmocka_unit_test(test_a_set_close_to_its_expiry_is_made_anew),
        cmocka_unit_test(test_a_directory_that_cannot_be_written_is_an_error_naming_the_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
