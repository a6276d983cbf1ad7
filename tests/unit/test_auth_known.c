/* Unit tests for the tokens seen passing (src/server/auth_known.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "server/auth_known.h"

static const char *const HASH_A = "aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11";
static const char *const HASH_B = "bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22";

static void test_a_token_seen_passing_is_known_until_it_fails(void **state)
{
    (void)state;
    static struct auth_known k;
    auth_known_init(&k);
    assert_false(auth_known_has(&k, HASH_A));
    auth_known_add(&k, HASH_A, 1000);
    assert_true(auth_known_has(&k, HASH_A));
    assert_false(auth_known_has(&k, HASH_B));
    auth_known_forget(&k, HASH_A);
    assert_false(auth_known_has(&k, HASH_A));
    auth_known_release(&k);
}

/* Hashes that share a bucket: the same first 8 characters. */
static void same_bucket_hash(char out[65], int i)
{
    snprintf(out, 65, "cc33cc33%056d", i);
}

static void test_a_full_bucket_forgets_its_least_recently_seen_token(void **state)
{
    (void)state;
    static struct auth_known k;
    auth_known_init(&k);
    char hash[AUTH_KNOWN_WAYS + 1][65];
    for (int i = 0; i <= AUTH_KNOWN_WAYS; i++)
        same_bucket_hash(hash[i], i);
    for (int i = 0; i < AUTH_KNOWN_WAYS; i++)
        auth_known_add(&k, hash[i], 100 + i);
    auth_known_add(&k, hash[0], 200); /* seen again: now the most recent */
    auth_known_add(&k, hash[AUTH_KNOWN_WAYS], 300);
    assert_true(auth_known_has(&k, hash[0]));
    assert_false(auth_known_has(&k, hash[1]));
    for (int i = 2; i <= AUTH_KNOWN_WAYS; i++)
        assert_true(auth_known_has(&k, hash[i]));
    auth_known_release(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_token_seen_passing_is_known_until_it_fails),
        cmocka_unit_test(test_a_full_bucket_forgets_its_least_recently_seen_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
