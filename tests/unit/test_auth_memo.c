/* Unit tests for a connection's remembered token hash (src/server/auth_memo.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/sha256.h"
#include "server/auth_memo.h"

static void assert_hash_of(const char *token, size_t len, const char *got)
{
    char want[65];
    sha256_hex(token, len, want);
    assert_string_equal(got, want);
}

static void test_a_token_sent_again_has_the_same_hash_as_the_first_time(void **state)
{
    (void)state;
    static struct auth_memo memo;
    const char *a = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char h[65];
    auth_memo_hash(&memo, a, strlen(a), h);
    assert_hash_of(a, strlen(a), h);
    memset(h, 0, sizeof h);
    auth_memo_hash(&memo, a, strlen(a), h);
    assert_hash_of(a, strlen(a), h);
}

static void test_another_token_on_the_connection_gets_its_own_hash(void **state)
{
    (void)state;
    static struct auth_memo memo;
    /* same length, differing only in the last character */
    const char *a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1";
    const char *b = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2";
    const char *c = "aaaa"; /* a prefix of both */
    char h[65];
    auth_memo_hash(&memo, a, strlen(a), h);
    auth_memo_hash(&memo, b, strlen(b), h);
    assert_hash_of(b, strlen(b), h);
    auth_memo_hash(&memo, c, strlen(c), h);
    assert_hash_of(c, strlen(c), h);
    auth_memo_hash(&memo, a, strlen(a), h);
    assert_hash_of(a, strlen(a), h);
}

static void test_a_token_too_long_to_keep_is_hashed_whole_every_time(void **state)
{
    (void)state;
    static struct auth_memo memo;
    char a[AUTH_MEMO_TOKEN_MAX + 40], b[AUTH_MEMO_TOKEN_MAX + 40];
    memset(a, 'x', sizeof a);
    memcpy(b, a, sizeof b);
    b[sizeof b - 1] = 'y'; /* differs only past what could be kept */
    char h[65];
    auth_memo_hash(&memo, a, sizeof a, h);
    assert_hash_of(a, sizeof a, h);
    auth_memo_hash(&memo, b, sizeof b, h);
    assert_hash_of(b, sizeof b, h);
    auth_memo_hash(&memo, a, sizeof a, h);
    assert_hash_of(a, sizeof a, h);
}

static void test_without_a_connection_to_keep_it_the_token_is_only_hashed(void **state)
{
    (void)state;
    char h[65];
    auth_memo_hash(NULL, "secret", 6, h);
    assert_hash_of("secret", 6, h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_token_sent_again_has_the_same_hash_as_the_first_time),
        cmocka_unit_test(test_another_token_on_the_connection_gets_its_own_hash),
        cmocka_unit_test(test_a_token_too_long_to_keep_is_hashed_whole_every_time),
        cmocka_unit_test(test_without_a_connection_to_keep_it_the_token_is_only_hashed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
