/*
 * The `queues:` section of tide.yaml: a list of queues that replaces the
 * built-in set (default, inference, training, batch, render).
 */
#include <stdio.h>
#include <string.h>

#include "server/config.h"

static int queue_key(struct config_ctx *c, const char *key, const char *field, const yaml_node_t *v,
                     struct queue_config *q)
{
    long n;
    int rc = 0;
    if (!strcmp(field, "name")) {
        const char *s = config_scalar(v);
        size_t len = s ? strlen(s) : 0;
        if (!len || len >= sizeof q->name)
            return config_fail(c, v, key, "must be 1 to 63 characters%s", "");
        for (const char *p = s; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  *p == '-' || *p == '_' || *p == '.'))
                return config_fail(c, v, key, "'%s': only letters, digits, '-', '_' and '.'", s);
        snprintf(q->name, sizeof q->name, "%s", s);
    } else if (!strcmp(field, "priority_min")) {
        if (!(rc = config_want_int(c, v, key, -1000, 1000, &n)))
            q->priority_min = (int)n;
    } else if (!strcmp(field, "priority_max")) {
        if (!(rc = config_want_int(c, v, key, -1000, 1000, &n)))
            q->priority_max = (int)n;
    } else if (!strcmp(field, "priority")) {
        if (!(rc = config_want_int(c, v, key, -1000, 1000, &n)))
            q->priority_default = (int)n;
    } else if (!strcmp(field, "max_running_jobs")) {
        if (!(rc = config_want_int(c, v, key, 0, 1000000, &n)))
            q->max_running_jobs = (int)n;
    } else if (!strcmp(field, "max_running_gpus")) {
        if (!(rc = config_want_int(c, v, key, 0, 10000000, &n)))
            q->max_running_gpus = (int)n;
    } else if (!strcmp(field, "max_wait_s")) {
        if (!(rc = config_want_int(c, v, key, 0, 365L * 86400, &n)))
            q->max_wait_s = n;
    } else if (!strcmp(field, "escalation")) {
        if (!(rc = config_want_int(c, v, key, 0, 10000, &n)))
            q->escalation = (int)n;
    } else if (!strcmp(field, "default_runtime_s")) {
        if (!(rc = config_want_int(c, v, key, 0, 366L * 86400, &n)))
            q->default_runtime_s = n;
    } else if (!strcmp(field, "max_runtime_s")) {
        if (!(rc = config_want_int(c, v, key, 0, 366L * 86400, &n)))
            q->max_runtime_s = n;
    } else if (!strcmp(field, "idle_util_pct")) {
        if (!(rc = config_want_int(c, v, key, 0, 100, &n)))
            q->idle_util_pct = (int)n;
    } else if (!strcmp(field, "idle_after_s")) {
        if (!(rc = config_want_int(c, v, key, 0, 30L * 86400, &n)))
            q->idle_after_s = n;
    } else if (!strcmp(field, "pools")) {
        if (v->type != YAML_SEQUENCE_NODE)
            return config_fail(c, v, key, "must be a list of pool names%s", "");
        q->npools = 0;
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            const char *pool = config_scalar(yaml_document_get_node(c->doc, *it));
            if (!pool || !*pool || strlen(pool) >= TIDE_NAME_MAX)
                return config_fail(c, v, key, "each pool must be a name of 1 to 63 characters%s", "");
            if (q->npools >= TIDE_MAX_QUEUE_POOLS)
                return config_fail(c, v, key, "at most 8 pools%s", "");
            snprintf(q->pools[q->npools++], TIDE_NAME_MAX, "%s", pool);
        }
    } else if (!strcmp(field, "allow_spot")) {
        rc = config_want_bool(c, v, key, &q->allow_spot);
    } else if (!strcmp(field, "preemptible")) {
        rc = config_want_bool(c, v, key, &q->preemptible);
    } else {
        return config_fail(c, v, key,
                           "unknown key (known: name, priority, priority_min, priority_max, "
                           "max_running_jobs, max_running_gpus, max_wait_s, escalation, "
                           "default_runtime_s, max_runtime_s, preemptible, allow_spot, idle_util_pct, idle_after_s, pools)%s", "");
    }
    return rc;
}

int config_section_queues(struct config_ctx *c, const char *name, const yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return config_fail(c, v, name, "must be a list of queues%s", "");
    struct queue_set *qs = &c->cfg->queues;
    memset(qs, 0, sizeof *qs);
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        const yaml_node_t *item = yaml_document_get_node(c->doc, *it);
        char where[64];
        snprintf(where, sizeof where, "queues[%d]", qs->count);
        if (qs->count >= TIDE_MAX_QUEUES)
            return config_fail(c, item, where, "at most 64 queues%s", "");
        if (item->type != YAML_MAPPING_NODE)
            return config_fail(c, item, where, "must be a mapping (name, priority, ...)%s", "");
        struct queue_config *q = &qs->queues[qs->count];
        memset(q, 0, sizeof *q);
        q->priority_min = -1000;
        q->priority_max = 1000;
        q->escalation = 100;
        const yaml_node_t *priority = NULL; /* checked once the range is known */
        for (yaml_node_pair_t *p = item->data.mapping.pairs.start; p < item->data.mapping.pairs.top; p++) {
            const yaml_node_t *value = yaml_document_get_node(c->doc, p->value);
            char key[128];
            const char *field;
            int rc = config_pair_key(c, where, item, p, key, sizeof key, &field);
            if (!rc)
                rc = queue_key(c, key, field, value, q);
            if (rc)
                return rc;
            if (!strcmp(field, "priority"))
                priority = value;
        }
        if (!q->name[0])
            return config_fail(c, item, where, "needs a name%s", "");
        if (queue_find(qs, q->name))
            return config_fail(c, item, where, "queue '%s' is defined twice", q->name);
        if (q->priority_min > q->priority_max)
            return config_fail(c, item, where, "priority_min is above priority_max%s", "");
        bool outside =
            q->priority_default < q->priority_min || q->priority_default > q->priority_max;
        if (outside && priority) {
            char key[96], why[128];
            snprintf(key, sizeof key, "%s.priority", where);
            snprintf(why, sizeof why, "must be from priority_min (%d) to priority_max (%d), got %d",
                     q->priority_min, q->priority_max, q->priority_default);
            return config_fail(c, priority, key, "%s", why);
        }
        if (outside) /* none given: the default 0 moves to the nearest end of the range */
            q->priority_default = q->priority_min > 0 ? q->priority_min
                                  : q->priority_max < 0 ? q->priority_max : 0;
        qs->count++;
        if (qs->count == 1)
            snprintf(qs->default_queue, sizeof qs->default_queue, "%s", q->name);
    }
    if (qs->count == 0)
        return config_fail(c, v, name, "needs at least one queue%s", "");
    /* A queue called "default" takes jobs that name none; else the first one does. */
    if (queue_find(qs, "default"))
        snprintf(qs->default_queue, sizeof qs->default_queue, "default");
    return 0;
}
