/*
 * The `projects:` section of tide.yaml: each project's GPU quota and
 * fair-share weight, and its budget (core/budget.h). Projects not listed
 * with a quota or weight may only borrow idle capacity; a project listed
 * with budget keys only takes no part in fair share. `user` is the user the
 * project's jobs run as on their nodes when a job names none.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "server/config.h"

/* The line of an entry of list before item that names project, or 0.
 * Entries before item were read already: each is a mapping with a name. */
static unsigned long listed_before(struct config_ctx *c, const yaml_node_t *list,
                                   const yaml_node_item_t *item, const char *project)
{
    for (const yaml_node_item_t *it = list->data.sequence.items.start; it < item; it++) {
        const yaml_node_t *entry = yaml_document_get_node(c->doc, *it);
        for (const yaml_node_pair_t *p = entry->data.mapping.pairs.start;
             p < entry->data.mapping.pairs.top; p++) {
            const char *k = config_scalar(yaml_document_get_node(c->doc, p->key));
            const char *v = config_scalar(yaml_document_get_node(c->doc, p->value));
            if (!strcmp(k, "name") && !strcmp(v, project))
                return (unsigned long)entry->start_mark.line + 1;
        }
    }
    return 0;
}

int config_section_projects(struct config_ctx *c, const char *name, const yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return config_fail(c, v, name, "must be a list of projects%s", "");
    struct fairshare *fs = &c->cfg->fairshare;
    int64_t half_life = fs->half_life_s;
    fairshare_init(fs, half_life);
    budget_set_init(&c->cfg->budgets);
    c->cfg->nproject_users = 0; /* the section replaces what an earlier file listed */
    int index = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++, index++) {
        const yaml_node_t *item = yaml_document_get_node(c->doc, *it);
        char where[64];
        snprintf(where, sizeof where, "projects[%d]", index);
        if (item->type != YAML_MAPPING_NODE)
            return config_fail(c, item, where, "must be a mapping (name, quota_gpus, weight)%s", "");
        struct project_config p = {.weight = 1};
        struct budget b;
        memset(&b, 0, sizeof b);
        bool share_keys = false, budget_keys = false, alerts_given = false;
        bool on_exhausted_given = false;
        const char *user = NULL;
        for (yaml_node_pair_t *pair = item->data.mapping.pairs.start;
             pair < item->data.mapping.pairs.top; pair++) {
            const yaml_node_t *val = yaml_document_get_node(c->doc, pair->value);
            char key[128];
            const char *k;
            long n;
            int rc = config_pair_key(c, where, item, pair, key, sizeof key, &k);
            if (rc)
                return rc;
            if (!strcmp(k, "name")) {
                const char *s = config_scalar(val);
                if (!s || !*s || strlen(s) >= sizeof p.name)
                    return config_fail(c, val, key, "must be 1 to 63 characters%s", "");
                /* as a job's project must be (and a metrics label may be) */
                for (const char *ch = s; *ch; ch++)
                    if (!isalnum((unsigned char)*ch) && *ch != '-' && *ch != '_' && *ch != '.')
                        return config_fail(c, val, key,
                                           "may contain only letters, digits, '-', '_' and '.'%s",
                                           "");
                snprintf(p.name, sizeof p.name, "%s", s);
            } else if (!strcmp(k, "quota_gpus")) {
                share_keys = true;
                if (!(rc = config_want_int(c, val, key, 0, 10000000, &n)))
                    p.quota_gpus = (int)n;
            } else if (!strcmp(k, "weight")) {
                share_keys = true;
                if (!(rc = config_want_int(c, val, key, 1, 1000000, &n)))
                    p.weight = (int)n;
            } else if ((!strcmp(k, "budget_daily") || !strcmp(k, "budget_monthly"))) {
                budget_keys = true;
                rc = config_want_money(c, val, key,
                                       &b.cap_micros[k[7] == 'd' ? BUDGET_DAILY : BUDGET_MONTHLY]);
            } else if (!strcmp(k, "alert_pct")) {
                alerts_given = true;
                if (val->type != YAML_SEQUENCE_NODE)
                    return config_fail(c, val, key, "must be a list of percentages like [50, 80, 100]%s", "");
                b.nalerts = 0;
                for (yaml_node_item_t *a = val->data.sequence.items.start;
                     !rc && a < val->data.sequence.items.top; a++) {
                    if (b.nalerts == BUDGET_MAX_ALERTS)
                        return config_fail(c, val, key, "at most %s thresholds", "8");
                    if (!(rc = config_want_int(c, yaml_document_get_node(c->doc, *a), key, 1, 1000, &n))) {
                        if (b.nalerts && n <= b.alert_pct[b.nalerts - 1])
                            return config_fail(c, val, key, "thresholds must rise%s", "");
                        b.alert_pct[b.nalerts++] = (int)n;
                    }
                }
            } else if ((!strcmp(k, "hard_cap") || !strcmp(k, "stop_running"))) {
                rc = config_want_bool(c, val, key, k[0] == 'h' ? &b.hard_cap : &b.stop_running);
            } else if (!strcmp(k, "on_exhausted")) {
                const char *s = config_scalar(val);
                if (!s || (strcmp(s, "wait") && strcmp(s, "reject")))
                    return config_fail(c, val, key, "must be wait (new jobs wait) or reject (refused at submit)%s", "");
                b.reject_when_exhausted = !strcmp(s, "reject");
                on_exhausted_given = true;
            } else if (!strcmp(k, "user")) {
                user = config_scalar(val);
                size_t n = user ? strlen(user) : 0;
                bool ok = n >= 1 && n <= 32 && user[0] != '-' && user[0] != '.';
                for (size_t i = 0; ok && i < n; i++)
                    ok = isalnum((unsigned char)user[i]) || strchr("._-", user[i]);
                if (!ok)
                    return config_fail(c, val, key, "must be a user name (1 to 32 letters, digits, '.', '_', '-')%s", "");
            } else if (!strcmp(k, "alert_hook")) {
                const char *s = config_scalar(val);
                if (!s || !*s || strlen(s) >= sizeof b.alert_hook)
                    return config_fail(c, val, key, "must be a command of at most %s characters", "255");
                snprintf(b.alert_hook, sizeof b.alert_hook, "%s", s);
            } else {
                return config_fail(c, val, key,
                                   "unknown key (known: name, quota_gpus, weight, budget_daily, "
                                   "budget_monthly, alert_pct, hard_cap, on_exhausted, stop_running, alert_hook, user)%s", "");
            }
            if (rc)
                return rc;
        }
        if (!p.name[0])
            return config_fail(c, item, where, "needs a name%s", "");
        /* One entry per project: its share, budget and user would otherwise
         * each come from whichever entry held them. */
        unsigned long first = listed_before(c, v, it, p.name);
        if (first) {
            char why[128];
            snprintf(why, sizeof why, "project '%s' is listed twice (first at line %lu)", p.name,
                     first);
            return config_fail(c, item, where, "%s", why);
        }
        if ((on_exhausted_given || b.stop_running) && !b.hard_cap)
            return config_fail(c, item, where, "on_exhausted and stop_running need hard_cap: true%s", "");
        if (budget_keys) {
            snprintf(b.project, sizeof b.project, "%s", p.name);
            if (!alerts_given) {
                static const int defaults[] = {50, 80, 100};
                memcpy(b.alert_pct, defaults, sizeof defaults);
                b.nalerts = 3;
            }
            if (!budget_add(&c->cfg->budgets, &b))
                return config_fail(c, item, where, "at most %s projects with a budget", "64");
        } else if (alerts_given || b.hard_cap || b.alert_hook[0]) {
            return config_fail(c, item, where, "alert_pct, hard_cap, on_exhausted, stop_running and alert_hook need budget_daily or budget_monthly%s", "");
        }
        if (user) {
            struct server_config *cfg = c->cfg;
            if (cfg->nproject_users == TIDE_MAX_PROJECT_USERS)
                return config_fail(c, item, where, "at most %s projects with a user", "256");
            snprintf(cfg->project_users[cfg->nproject_users].project, TIDE_NAME_MAX, "%s", p.name);
            snprintf(cfg->project_users[cfg->nproject_users].user, 33, "%s", user);
            cfg->nproject_users++;
        }
        if (!share_keys && (budget_keys || user))
            continue;
        if (!fairshare_add(fs, &p))
            return config_fail(c, item, where, "at most %s projects in fair share", "256");
    }
    return 0;
}
