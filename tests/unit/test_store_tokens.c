/*
 * Node-bound join tokens in the store (src/store/store_tokens.c) on a real
 * SQLite file: used once, inside the caller's transaction, then listed as
 * used; revoked by their node's name. Rotating the admin or shared join
 * tokens out (kept, as TOKEN_ROTATED) touches no other kind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store.h"
#include "test_store_target.h"
#include "store/store_tokens.h"

struct fixture {
    struct test_store_target t;
    struct store *s;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    test_store_target_make(&f->t);
    f->s = test_store_target_open(&f->t);
    assert_int_equal(store_token_put(f->s, "hash-a", TOKEN_JOIN_BOUND, "gpu-a", NULL, 0, 1000,
                                     NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    store_close(f->s);
    test_store_target_remove(&f->t);
    free(f);
    return 0;
}

static enum token_kind kind_of(struct store *s, const char *hash)
{
    struct token_info t;
    assert_int_equal(store_token_get(s, hash, &t, NULL), 0);
    enum token_kind k = t.kind;
    token_info_release(&t);
    return k;
}

/* The listed token named name's "used", or -1 when it is not listed. */
static int listed_used(struct store *s, const char *name)
{
    json_t *list = NULL;
    assert_int_equal(store_tokens_list(s, &list, NULL), 0);
    int used = -1;
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t) if (!strcmp(json_string_value(json_object_get(t, "name")), name))
    {
        assert_string_equal(json_string_value(json_object_get(t, "kind")), "join");
        used = json_is_true(json_object_get(t, "used"));
    }
    json_decref(list);
    return used;
}

static void test_a_bound_join_token_is_used_once(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(listed_used(f->s, "gpu-a"), 0);
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_token_use_join(f->s, "hash-a", NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    assert_int_equal(kind_of(f->s, "hash-a"), TOKEN_JOIN_USED);
    assert_int_equal(listed_used(f->s, "gpu-a"), 1);
    struct tide_err err;
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_token_use_join(f->s, "hash-a", &err), TIDE_EAUTH);
    store_rollback(f->s);
    assert_non_null(strstr(err.message, "already used"));
}

static void test_a_rolled_back_registration_leaves_the_token_unused(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_token_use_join(f->s, "hash-a", NULL), 0);
    store_rollback(f->s);
    assert_int_equal(kind_of(f->s, "hash-a"), TOKEN_JOIN_BOUND);
    assert_int_equal(listed_used(f->s, "gpu-a"), 0);
}

static void test_only_bound_join_tokens_can_be_used(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(store_token_put(f->s, "hash-shared", TOKEN_JOIN, "join", NULL, 0, 1000, NULL),
                     0);
    assert_int_equal(store_token_use_join(f->s, "hash-shared", NULL), TIDE_EAUTH);
    assert_int_equal(store_token_use_join(f->s, "no-such-hash", NULL), TIDE_EAUTH);
    assert_int_equal(kind_of(f->s, "hash-shared"), TOKEN_JOIN);
    assert_int_equal(listed_used(f->s, "join"), -1); /* the shared token is never listed */
}

static void test_revoking_a_node_name_removes_its_join_tokens(void **state)
{
    struct fixture *f = *state;
    int n = 0;
    assert_int_equal(store_tokens_revoke(f->s, "gpu-a", &n, NULL), 0);
    assert_int_equal(n, 1);
    struct token_info t;
    assert_int_equal(store_token_get(f->s, "hash-a", &t, NULL), TIDE_ENOENT);
}

static void test_rotating_marks_only_that_kind_and_keeps_the_rows(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(store_token_put(f->s, "admin-1", TOKEN_ADMIN, "admin", NULL, 0, 1000, NULL),
                     0);
    assert_int_equal(store_token_put(f->s, "admin-2", TOKEN_ADMIN, "admin", NULL, 0, 1000, NULL),
                     0);
    assert_int_equal(store_token_put(f->s, "shared", TOKEN_JOIN, "join", NULL, 0, 1000, NULL), 0);
    int n = 0;
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_tokens_rotate(f->s, TOKEN_ADMIN, &n, NULL), 0);
    assert_int_equal(store_commit(f->s, NULL), 0);
    assert_int_equal(n, 2);
    assert_int_equal(kind_of(f->s, "admin-1"), TOKEN_ROTATED);
    assert_int_equal(kind_of(f->s, "admin-2"), TOKEN_ROTATED);
    assert_int_equal(kind_of(f->s, "shared"), TOKEN_JOIN);
    assert_int_equal(kind_of(f->s, "hash-a"), TOKEN_JOIN_BOUND);
    assert_int_equal(listed_used(f->s, "admin"), -1); /* never listed */
    /* rolled back, a rotation leaves the tokens as they were */
    assert_int_equal(store_begin(f->s, NULL), 0);
    assert_int_equal(store_tokens_rotate(f->s, TOKEN_JOIN, &n, NULL), 0);
    assert_int_equal(n, 1);
    store_rollback(f->s);
    assert_int_equal(kind_of(f->s, "shared"), TOKEN_JOIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_bound_join_token_is_used_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_rolled_back_registration_leaves_the_token_unused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_bound_join_tokens_can_be_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revoking_a_node_name_removes_its_join_tokens, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rotating_marks_only_that_kind_and_keeps_the_rows,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
