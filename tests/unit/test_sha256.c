/* Unit tests for token hashing and comparison (src/common/sha256.c, nettle):
 * the digests are the standard ones, so tokens stored by earlier versions
 * (which had their own SHA-256) still match. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"

static void test_digests_are_the_fips_180_vectors(void **state)
{
    (void)state;
    char hex[65];
    sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two_blocks, strlen(two_blocks), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_a_million_as_hash_like_the_standard_says(void **state)
{
    (void)state;
    size_t n = 1000000;
    char *a = malloc(n);
    assert_non_null(a);
    memset(a, 'a', n);
    char hex[65];
    sha256_hex(a, n, hex);
    free(a);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_a_token_stored_by_the_old_hasher_is_still_found(void **state)
{
    (void)state;
    /* admin.token of a data dir made before nettle, and the hash the old
     * src/common/sha256.c stored for it in the tokens table */
    const char *token = "5f2b8c0e9d7a41f3b6e2c8a90d1f4e7b3a6c9e2f5b8d1a4c7e0f3b6a9c2e5f8b";
    char hex[65];
    sha256_hex(token, strlen(token), hex);
    assert_string_equal(hex, "ecd913df32aec3bcda120ec7cefa79ef0b0893c694c12dfc55d94684e412fb57");
}

static void test_constant_time_compare_tells_equal_from_different(void **state)
{
    (void)state;
    assert_true(ct_str_equal("", ""));
    assert_true(ct_str_equal("abc123", "abc123"));
    assert_false(ct_str_equal("abc123", "abc124"));
    assert_false(ct_str_equal("xbc123", "abc123"));
    assert_false(ct_str_equal("abc", "abc1"));
    assert_false(ct_str_equal("abc1", "abc"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digests_are_the_fips_180_vectors),
        cmocka_unit_test(test_a_million_as_hash_like_the_standard_says),
        cmocka_unit_test(test_a_token_stored_by_the_old_hasher_is_still_found),
        cmocka_unit_test(test_constant_time_compare_tells_equal_from_different),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
