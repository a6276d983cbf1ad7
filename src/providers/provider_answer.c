/* An exec provider's answers read into provider_nodes (see provider_answer.h). */
#include "providers/provider_answer.h"

#include <stdbool.h>
#include <string.h>

#include "common/log.h"

/* An id is handed back to the program (`delete ID`) and written in the
 * log and events: a control byte in it could forge a log line. */
static bool has_control_byte(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

json_t *provider_answer_nodes(const char *prog, const char *text, struct tide_err *err)
{
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes)) {
        tide_err_set(err, TIDE_EIO, NULL, "%s: stdout is not {\"nodes\": [...]} (%s)", prog,
                     root ? "no nodes array" : jerr.text);
        json_decref(root);
        return NULL;
    }
    json_incref(nodes);
    json_decref(root);
    return nodes;
}

int provider_answer_create(const char *prog, const char *pool, const char *text, int run_rc,
                           struct provider_node *nodes, int count, struct tide_err *err)
{
    int rc = run_rc;
    /* a create that failed after it made nodes may name them: their ids
     * are what deletes them (else only a later list finds them) */
    struct tide_err ignored;
    json_t *list = text ? provider_answer_nodes(prog, text, rc ? &ignored : err) : NULL;
    if (!list)
        return rc ? rc : TIDE_EIO;
    size_t i;
    json_t *n;
    json_array_foreach(list, i, n)
    {
        const char *id = json_string_value(json_object_get(n, "id"));
        const char *name = json_string_value(json_object_get(n, "name"));
        int k = name ? -1 : (int)i; /* by name; by position only when it gives none */
        for (int j = 0; name && j < count; j++)
            if (!strcmp(nodes[j].name, name))
                k = j;
        if (k < 0 && id && !has_control_byte(id) && !has_control_byte(name))
            log_warn("pool %s: %s create named %s, which tide did not ask for (its names are "
                     "TIDE_NODE_NAMES): its id %s is not kept",
                     pool, prog, name, id);
        else if (k < 0 && id)
            log_warn("pool %s: %s create named a node tide did not ask for, with a control "
                     "character in its name or id: not kept",
                     pool, prog);
        if (k < 0 || k >= count || !id)
            continue;
        if (strlen(id) >= sizeof nodes[k].id) {
            if (!rc)
                rc = tide_err_set(err, TIDE_EIO, NULL,
                                  "%s create: the id of %s is %zu bytes, over tide's %zu", prog,
                                  nodes[k].name, strlen(id), sizeof nodes[k].id - 1);
            continue;
        }
        if (has_control_byte(id)) {
            if (!rc)
                rc = tide_err_set(err, TIDE_EIO, NULL,
                                  "%s create: the id of %s holds a control character", prog,
                                  nodes[k].name);
            continue;
        }
        snprintf(nodes[k].id, sizeof nodes[k].id, "%s", id);
    }
    json_decref(list);
    return rc;
}

int provider_answer_list(const char *prog, const char *pool, const char *text,
                         struct provider_node *nodes, int max, struct tide_err *err)
{
    json_t *list = provider_answer_nodes(prog, text, err);
    if (!list)
        return TIDE_EIO;
    int n = 0;
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        const char *id = json_string_value(json_object_get(item, "id"));
        const char *name = json_string_value(json_object_get(item, "name"));
        const char *state = json_string_value(json_object_get(item, "state"));
        if (!id && !name)
            continue;
        if (n == max) {
            log_warn("pool %s: %s list named more than %d nodes: the rest are not looked at "
                     "this time",
                     pool, prog, max);
            break;
        }
        if (id && strlen(id) >= sizeof nodes[n].id) { /* that one alone */
            log_warn("pool %s: %s list: an id of %zu bytes, over tide's %zu: not looked at", pool,
                     prog, strlen(id), sizeof nodes[n].id - 1);
            continue;
        }
        /* cut, it could match a node of tide's that it is not, and take
         * its id or report it interrupted; tide's names are shorter */
        if (name && strlen(name) >= sizeof nodes[n].name) {
            log_warn("pool %s: %s list: a name of %zu bytes, over tide's %zu: not looked at", pool,
                     prog, strlen(name), sizeof nodes[n].name - 1);
            continue;
        }
        if ((id && has_control_byte(id)) || (name && has_control_byte(name))) {
            log_warn("pool %s: %s list: an id or name with a control character: not looked at",
                     pool, prog);
            continue;
        }
        struct provider_node *pn = &nodes[n++];
        memset(pn, 0, sizeof *pn);
        snprintf(pn->name, sizeof pn->name, "%s", name ? name : "");
        snprintf(pn->id, sizeof pn->id, "%s", id ? id : "");
        pn->interrupted = state && (!strcmp(state, "interrupted") || !strcmp(state, "preempted"));
    }
    json_decref(list);
    return n;
}
