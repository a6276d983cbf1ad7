/* Unit tests for the recently seen tokens (src/server/auth_cache.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "server/auth_cache.h"

static const char *const HASH_A = "aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11";
static const char *const HASH_B = "bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22";

static struct token_info user_token(const char *name, json_t *projects)
{
    struct token_info t;
    memset(&t, 0, sizeof t);
    t.kind = TOKEN_USER;
    strcpy(t.name, name);
    t.projects = projects;
    return t;
}

static void test_a_token_looked_up_is_found_again_with_its_own_projects(void **state)
{
    (void)state;
    static struct auth_cache c;
    auth_cache_init(&c);
    struct token_info got;
    uint64_t gen;
    assert_false(auth_cache_get(&c, HASH_A, 1000, &got, &gen));
    struct token_info alice = user_token("alice", json_pack("[s]", "vision"));
    auth_cache_put(&c, HASH_A, &alice, gen, 1000);
    token_info_release(&alice); /* the cache keeps its own copy */
    assert_true(auth_cache_get(&c, HASH_A, 1500, &got, &gen));
    assert_string_equal(got.name, "alice");
    assert_int_equal(got.kind, TOKEN_USER);
    assert_string_equal(json_string_value(json_array_get(got.projects, 0)), "vision");
    token_info_release(&got);
    assert_false(auth_cache_get(&c, HASH_B, 1500, &got, &gen));
    auth_cache_release(&c);
}

static void test_an_entry_lives_at_most_the_ttl(void **state)
{
    (void)state;
    static struct auth_cache c;
    auth_cache_init(&c);
    struct token_info got;
    uint64_t gen;
    auth_cache_get(&c, HASH_A, 0, &got, &gen);
    struct token_info alice = user_token("alice", NULL);
    auth_cache_put(&c, HASH_A, &alice, gen, 5000);
    assert_true(auth_cache_get(&c, HASH_A, 5000 + AUTH_CACHE_TTL_MS - 1, &got, &gen));
    token_info_release(&got);
    assert_false(auth_cache_get(&c, HASH_A, 5000 + AUTH_CACHE_TTL_MS, &got, &gen));
    assert_false(auth_cache_get(&c, HASH_A, 4000, &got, &gen)); /* clock went back */
    auth_cache_release(&c);
}

static void test_a_change_to_the_tokens_forgets_them_all(void **state)
{
    (void)state;
    static struct auth_cache c;
    auth_cache_init(&c);
    struct token_info got;
    uint64_t gen;
    auth_cache_get(&c, HASH_A, 0, &got, &gen);
    struct token_info alice = user_token("alice", NULL);
    auth_cache_put(&c, HASH_A, &alice, gen, 0);
    auth_cache_invalidate(&c);
    assert_false(auth_cache_get(&c, HASH_A, 1, &got, &gen));
    auth_cache_release(&c);
}

static void test_a_lookup_that_raced_a_revoke_is_not_kept(void **state)
{
    (void)state;
    static struct auth_cache c;
    auth_cache_init(&c);
    struct token_info got;
    uint64_t gen;
    auth_cache_get(&c, HASH_A, 0, &got, &gen); /* miss: the store is asked */
    auth_cache_invalidate(&c);                 /* meanwhile the token is revoked */
    struct token_info alice = user_token("alice", NULL);
    auth_cache_put(&c, HASH_A, &alice, gen, 0); /* what the store said before */
    assert_false(auth_cache_get(&c, HASH_A, 1, &got, &gen));
    auth_cache_release(&c);
}

static void test_only_admin_and_user_tokens_are_kept(void **state)
{
    (void)state;
    static struct auth_cache c;
    auth_cache_init(&c);
    struct token_info got;
    uint64_t gen;
    const enum token_kind kept[] = {TOKEN_ADMIN, TOKEN_USER};
    const enum token_kind not_kept[] = {TOKEN_JOIN, TOKEN_NODE, TOKEN_METRICS};
    for (size_t i = 0; i < sizeof not_kept / sizeof not_kept[0]; i++) {
        struct token_info t = user_token("x", NULL);
        t.kind = not_kept[i];
        auth_cache_get(&c, HASH_A, 0, &got, &gen);
        auth_cache_put(&c, HASH_A, &t, gen, 0);
        assert_false(auth_cache_get(&c, HASH_A, 1, &got, &gen));
    }
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        struct token_info t = user_token("x", NULL);
        t.kind = kept[i];
        auth_cache_get(&c, HASH_B, 0, &got, &gen);
        auth_cache_put(&c, HASH_B, &t, gen, 0);
        assert_true(auth_cache_get(&c, HASH_B, 1, &got, &gen));
        assert_int_equal(got.kind, kept[i]);
        token_info_release(&got);
    }
    auth_cache_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_token_looked_up_is_found_again_with_its_own_projects),
        cmocka_unit_test(test_an_entry_lives_at_most_the_ttl),
        cmocka_unit_test(test_a_change_to_the_tokens_forgets_them_all),
        cmocka_unit_test(test_a_lookup_that_raced_a_revoke_is_not_kept),
        cmocka_unit_test(test_only_admin_and_user_tokens_are_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
