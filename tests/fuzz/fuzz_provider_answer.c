/*
 * Fuzz target: what an exec provider's program prints (providers/
 * provider_answer.c), read as the answer of `create` for four nodes (once
 * after a successful run, once after a failed one) and of `list` into room
 * for four. Every id taken must be whole (under PROVIDER_ID_MAX bytes, as
 * docs/providers.md says: a longer one is refused, never cut), UTF-8 and
 * free of control bytes; every name taken must be the one printed, not a
 * cut of it; a create whose id for one of its nodes is too long fails.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "providers/provider_answer.h"

#define FUZZ_NODES 4

static bool is_utf8(const char *s)
{
    json_t *j = json_string(s); /* jansson refuses what is not UTF-8 */
    json_decref(j);
    return j != NULL;
}

static bool has_control_byte(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

/* An id as a node may hold it: NUL-terminated in its array, text. */
static void check_id(const struct provider_node *pn)
{
    if (!memchr(pn->id, '\0', sizeof pn->id) || !memchr(pn->name, '\0', sizeof pn->name))
        abort();
    if (!is_utf8(pn->id) || has_control_byte(pn->id))
        abort();
}

static void check_failure(int rc, const struct tide_err *err)
{
    if (rc >= 0 || !err->message[0] || !is_utf8(err->message))
        abort(); /* a failure says why, as text */
}

/* The entries of text's "nodes" array naming node k of the create (by
 * name, or by position when they give none) with an id too long to keep. */
static bool names_too_long_id(json_t *nodes, const struct provider_node *asked, int k)
{
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n)
    {
        const char *id = json_string_value(json_object_get(n, "id"));
        const char *name = json_string_value(json_object_get(n, "name"));
        bool named = name ? !strcmp(name, asked[k].name) : i == (size_t)k;
        if (named && id && strlen(id) >= PROVIDER_ID_MAX)
            return true;
    }
    return false;
}

static void check_create(const char *text, json_t *nodes, int run_rc)
{
    struct provider_node asked[FUZZ_NODES];
    memset(asked, 0, sizeof asked);
    for (int k = 0; k < FUZZ_NODES; k++)
        snprintf(asked[k].name, sizeof asked[k].name, "gpu-%d", k);
    struct tide_err err;
    tide_err_clear(&err);
    if (run_rc)
        tide_err_set(&err, run_rc, NULL, "fuzz create: exit 1");
    int rc = provider_answer_create("fuzz", "pool", text, run_rc, asked, FUZZ_NODES, &err);
    if (run_rc && rc != run_rc)
        abort(); /* the run's own failure is the one reported */
    if (rc)
        check_failure(rc, &err);
    for (int k = 0; k < FUZZ_NODES; k++) {
        char name[16];
        snprintf(name, sizeof name, "gpu-%d", k);
        if (strcmp(asked[k].name, name) != 0)
            abort();
        check_id(&asked[k]);
        if (!rc && nodes && names_too_long_id(nodes, asked, k))
            abort(); /* an id that does not fit fails the create */
    }
}

/* Each node taken is the next entry of the answer that names something,
 * whose id and name fit and are free of control bytes, with its name and
 * id as printed. */
static void check_list(const char *text, json_t *nodes)
{
    struct provider_node listed[FUZZ_NODES];
    struct tide_err err;
    tide_err_clear(&err);
    int n = provider_answer_list("fuzz", "pool", text, listed, FUZZ_NODES, &err);
    if (n < 0) {
        check_failure(n, &err);
        if (nodes)
            abort(); /* an answer with a nodes array is read */
        return;
    }
    if (n > FUZZ_NODES || !nodes)
        abort();
    size_t next = 0;
    for (int i = 0; i < n; i++) {
        check_id(&listed[i]);
        const char *id = NULL, *name = NULL;
        while (next < json_array_size(nodes)) {
            json_t *e = json_array_get(nodes, next++);
            id = json_string_value(json_object_get(e, "id"));
            name = json_string_value(json_object_get(e, "name"));
            bool id_ok = !id || (strlen(id) < PROVIDER_ID_MAX && !has_control_byte(id));
            bool name_ok = !name || (strlen(name) < TIDE_NAME_MAX && !has_control_byte(name));
            if ((id || name) && id_ok && name_ok)
                break;
            id = name = NULL;
        }
        if (!id && !name)
            abort(); /* more nodes than the answer gave */
        if (strcmp(listed[i].id, id ? id : "") != 0 ||
            strcmp(listed[i].name, name ? name : "") != 0)
            abort(); /* cut, or not the entry printed */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_strndup(data, size);
    if (!text)
        return 0;
    json_t *root = json_loads(text, 0, NULL);
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes))
        nodes = NULL;
    check_create(text, nodes, 0);
    check_create(text, nodes, TIDE_EIO);
    check_list(text, nodes);
    json_decref(root);
    free(text);
    return 0;
}
