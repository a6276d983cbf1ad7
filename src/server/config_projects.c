/*
 * The `projects:` section of tide.yaml: each project's GPU quota and
 * fair-share weight. Projects not listed may only borrow idle capacity.
 */
#include <stdio.h>
#include <string.h>

#include "server/config.h"

int config_section_projects(struct config_ctx *c, const char *name, const yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return config_fail(c, v, name, "must be a list of projects%s", "");
    struct fairshare *fs = &c->cfg->fairshare;
    int64_t half_life = fs->half_life_s;
    fairshare_init(fs, half_life);
    int index = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++, index++) {
        const yaml_node_t *item = yaml_document_get_node(c->doc, *it);
        char where[64];
        snprintf(where, sizeof where, "projects[%d]", index);
        if (item->type != YAML_MAPPING_NODE)
            return config_fail(c, item, where, "must be a mapping (name, quota_gpus, weight)%s", "");
        struct project_config p = {.weight = 1};
        for (yaml_node_pair_t *pair = item->data.mapping.pairs.start;
             pair < item->data.mapping.pairs.top; pair++) {
            const char *k = config_scalar(yaml_document_get_node(c->doc, pair->key));
            const yaml_node_t *val = yaml_document_get_node(c->doc, pair->value);
            char key[128];
            snprintf(key, sizeof key, "%s.%s", where, k ? k : "?");
            long n;
            int rc = 0;
            if (k && !strcmp(k, "name")) {
                const char *s = config_scalar(val);
                if (!s || !*s || strlen(s) >= sizeof p.name)
                    return config_fail(c, val, key, "must be 1 to 63 characters%s", "");
                snprintf(p.name, sizeof p.name, "%s", s);
            } else if (k && !strcmp(k, "quota_gpus")) {
                if (!(rc = config_want_int(c, val, key, 0, 10000000, &n)))
                    p.quota_gpus = (int)n;
            } else if (k && !strcmp(k, "weight")) {
                if (!(rc = config_want_int(c, val, key, 1, 1000000, &n)))
                    p.weight = (int)n;
            } else {
                return config_fail(c, val, key, "unknown key (known: name, quota_gpus, weight)%s", "");
            }
            if (rc)
                return rc;
        }
        if (!p.name[0])
            return config_fail(c, item, where, "needs a name%s", "");
        if (!fairshare_add(fs, &p))
            return config_fail(c, item, where, "project '%s' is listed twice (or too many)", p.name);
    }
    return 0;
}
