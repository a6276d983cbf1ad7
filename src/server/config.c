/* Loading tide.yaml with libyaml's document API, keeping line numbers for errors. */
#include "server/config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/fsutil.h"
#include "common/parse_scalar.h"

int config_fail(struct config_ctx *c, const yaml_node_t *at, const char *key, const char *fmt,
                const char *detail)
{
    char reason[256];
    snprintf(reason, sizeof reason, fmt, detail);
    return tide_err_set(c->err, TIDE_EINVAL, key, "%s:%lu: %s: %s", c->path,
                        at ? (unsigned long)at->start_mark.line + 1 : 0UL, key, reason);
}

const char *config_scalar(const yaml_node_t *n)
{
    if (!n || n->type != YAML_SCALAR_NODE)
        return NULL;
    const char *s = (const char *)n->data.scalar.value;
    return strlen(s) == n->data.scalar.length ? s : NULL;
}

int config_pair_key(struct config_ctx *c, const char *section, const yaml_node_t *map,
                    const yaml_node_pair_t *p, char *key, size_t size, const char **name)
{
    const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
    const char *text = config_scalar(k);
    bool scalar = k->type == YAML_SCALAR_NODE;
    snprintf(key, size, "%s%s%s", section ? section : "", section ? "." : "",
             scalar ? (const char *)k->data.scalar.value : "?");
    if (!text)
        return config_fail(c, k, key, "%s",
                           scalar ? "a key must not hold a NUL character"
                                  : "a key must be plain text, not a list or a mapping");
    /* Only keys already taken come before p: a walk stops at the first
     * unknown one, so this stays short. */
    for (const yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
        const yaml_node_t *earlier = yaml_document_get_node(c->doc, q->key);
        if (config_scalar(earlier) && !strcmp(config_scalar(earlier), text)) {
            char line[24];
            snprintf(line, sizeof line, "%lu", (unsigned long)earlier->start_mark.line + 1);
            return config_fail(c, k, key, "duplicate key (first at line %s)", line);
        }
    }
    *name = text;
    return 0;
}

int config_want_int(struct config_ctx *c, const yaml_node_t *v, const char *key, long lo, long hi,
                    long *out)
{
    const char *s = config_scalar(v);
    if (!s)
        return config_fail(c, v, key, "must be a number%s", "");
    long long n;
    int rc = parse_scalar_int(s, &n);
    if (rc == -EINVAL)
        return config_fail(c, v, key, "must be an integer, got '%s'", s);
    if (rc || n < lo || n > hi) {
        char range[96];
        snprintf(range, sizeof range, "must be from %ld to %ld, got %.40s", lo, hi, s);
        return config_fail(c, v, key, "%s", range);
    }
    *out = (long)n;
    return 0;
}

int config_want_bool(struct config_ctx *c, const yaml_node_t *v, const char *key, bool *out)
{
    const char *s = config_scalar(v);
    if (!s || parse_scalar_bool(s, out))
        return config_fail(c, v, key, "must be true or false, got '%s'",
                           s ? s : "a list or mapping");
    return 0;
}

/* server.tls_cert, tls_key, tls_client_ca: a PEM file's path, "" for none
 * (the files are checked when the server starts, naming them). */
static int tls_path_key(struct config_ctx *c, const char *key, const char *name,
                        const yaml_node_t *v)
{
    const char *s = config_scalar(v);
    char *dst = !strcmp(name, "tls_cert")  ? c->cfg->tls_cert
                : !strcmp(name, "tls_key") ? c->cfg->tls_key
                                           : c->cfg->tls_client_ca;
    if (!s)
        return config_fail(c, v, key, "must be a file path (\"\" for none)%s", "");
    if (strlen(s) >= sizeof c->cfg->tls_cert)
        return config_fail(c, v, key, "path too long%s", "");
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

int config_host_port(const char *field, const char *flag, const char *v, char *host, size_t size,
                     int *port, struct tide_err *err)
{
    const char *colon = strrchr(v, ':');
    long long n = -1;
    if (!colon || colon == v || (size_t)(colon - v) >= size ||
        parse_scalar_int(colon + 1, &n) != 0 || colon[1] == '-' || n > 65535)
        return tide_err_set(err, TIDE_EINVAL, field, "%s: expected HOST:PORT, got '%s'", flag, v);
    memcpy(host, v, (size_t)(colon - v));
    host[colon - v] = '\0';
    if (!strcmp(host, "localhost"))
        snprintf(host, size, "127.0.0.1");
    *port = (int)n;
    return 0;
}

static int server_key(struct config_ctx *c, const char *key, const char *name, const yaml_node_t *v)
{
    long n;
    int rc;
    if (!strcmp(name, "node_timeout_ms")) {
        if (!(rc = config_want_int(c, v, key, 100, 86400000, &n)))
            c->cfg->node_timeout_ms = n;
    } else if (!strcmp(name, "heartbeat_ms")) {
        if (!(rc = config_want_int(c, v, key, 50, 600000, &n)))
            c->cfg->heartbeat_interval_ms = (int)n;
    } else if (!strcmp(name, "kill_grace_s")) {
        if (!(rc = config_want_int(c, v, key, 0, 3600, &n)))
            c->cfg->kill_grace_s = (int)n;
    } else if (!strcmp(name, "tls_cert") || !strcmp(name, "tls_key") ||
               !strcmp(name, "tls_client_ca")) {
        rc = tls_path_key(c, key, name, v);
    } else if (!strcmp(name, "insecure_plain_http") || !strcmp(name, "shared_join_token") ||
               !strcmp(name, "tls_client_cn_is_node")) {
        bool yes;
        if ((rc = config_want_bool(c, v, key, &yes)))
            return rc;
        if (!strcmp(name, "insecure_plain_http"))
            c->cfg->insecure_plain_http = yes;
        else if (!strcmp(name, "tls_client_cn_is_node"))
            c->cfg->tls_client_cn_is_node = yes;
        else
            c->cfg->shared_join_token_off = !yes;
        rc = 0;
    } else if (!strcmp(name, "agent_listen")) {
        const char *s = config_scalar(v);
        struct tide_err why;
        if (!s)
            return config_fail(c, v, key, "must be HOST:PORT%s", "");
        c->cfg->agent_listen = s[0] != '\0'; /* "": none */
        if (c->cfg->agent_listen &&
            config_host_port("agent_listen", key, s, c->cfg->agent_listen_host,
                             sizeof c->cfg->agent_listen_host, &c->cfg->agent_listen_port, &why))
            return config_fail(c, v, key, "must be HOST:PORT (\"\" for none), got '%s'", s);
        rc = 0;
    } else if (!strcmp(name, "store")) { /* "": DATA/tide.db */
        const char *s = config_scalar(v);
        if (!s)
            return config_fail(c, v, key,
                               "must be a postgres:// URL or a SQLite path (\"\": DATA/tide.db)%s",
                               "");
        if (strlen(s) >= sizeof c->cfg->store)
            return config_fail(c, v, key, "URL or path too long%s", "");
        memcpy(c->cfg->store, s, strlen(s) + 1);
        rc = 0;
    } else if (!strcmp(name, "node_fault_limit")) {
        if (!(rc = config_want_int(c, v, key, 0, 1000, &n)))
            c->cfg->node_fault_limit = (int)n;
    } else if (!strcmp(name, "node_fault_window_s")) {
        if (!(rc = config_want_int(c, v, key, 1, 30 * 86400, &n)))
            c->cfg->node_fault_window_s = n;
    } else {
        rc = config_fail(c, v, key,
                         "unknown key (known: node_timeout_ms, heartbeat_ms, kill_grace_s, "
                         "tls_cert, tls_key, tls_client_ca, tls_client_cn_is_node, "
                         "insecure_plain_http, shared_join_token, agent_listen, store, "
                         "node_fault_limit, node_fault_window_s)%s", "");
    }
    return rc;
}

static int scheduler_key(struct config_ctx *c, const char *key, const char *name,
                         const yaml_node_t *v)
{
    long n;
    int rc;
    if (!strcmp(name, "placement")) {
        const char *s = config_scalar(v);
        const struct placement_ops *p = s ? placement_by_name(s) : NULL;
        if (!p) {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown placement '%.60s' (known: %s)", s ? s : "?",
                     placement_names());
            return config_fail(c, v, key, "%s", msg);
        }
        c->sc->placement = p;
        rc = 0;
    } else if (!strcmp(name, "policy")) {
        const char *s = config_scalar(v);
        const struct order_ops *o = s ? order_by_name(s) : NULL;
        if (!o) {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown policy '%.60s' (known: %s)", s ? s : "?",
                     order_names());
            return config_fail(c, v, key, "%s", msg);
        }
        c->sc->order = o;
        rc = 0;
    } else if (!strcmp(name, "backfill") || !strcmp(name, "preemption") ||
               !strcmp(name, "queue_round_robin")) {
        bool on;
        if ((rc = config_want_bool(c, v, key, &on)))
            return rc;
        if (!strcmp(name, "backfill"))
            c->sc->backfill = on;
        else if (!strcmp(name, "preemption"))
            c->sc->preemption = on;
        else
            c->sc->queue_round_robin = on;
        rc = 0;
    } else if (!strcmp(name, "fair_share_half_life_s")) {
        if (!(rc = config_want_int(c, v, key, 1, 365L * 86400, &n)))
            c->cfg->fairshare.half_life_s = n;
    } else if (!strcmp(name, "retry_backoff_s")) {
        if (!(rc = config_want_int(c, v, key, 0, 86400, &n)))
            c->sc->retry_backoff_ms = n * 1000;
    } else if (!strcmp(name, "retry_backoff_max_s")) {
        if (!(rc = config_want_int(c, v, key, 0, 86400, &n)))
            c->sc->retry_backoff_max_ms = n * 1000;
    } else if (!strcmp(name, "max_gpu_memory_used_pct")) {
        if (!(rc = config_want_int(c, v, key, 0, 100, &n)))
            c->sc->placement_cfg.max_gpu_memory_used_pct = (int)n;
    } else if (!strcmp(name, "max_gpu_utilization_pct")) {
        if (!(rc = config_want_int(c, v, key, 0, 100, &n)))
            c->sc->placement_cfg.max_gpu_utilization_pct = (int)n;
    } else {
        rc = config_fail(c, v, key,
                         "unknown key (known: policy, placement, backfill, preemption, "
                         "queue_round_robin, retry_backoff_s, "
                         "retry_backoff_max_s, fair_share_half_life_s, max_gpu_memory_used_pct, "
                         "max_gpu_utilization_pct)%s",
                         "");
    }
    return rc;
}

int config_walk_mapping(struct config_ctx *c, const char *section, const yaml_node_t *map,
                        config_key_fn fn)
{
    if (map->type != YAML_MAPPING_NODE)
        return config_fail(c, map, section, "must be a mapping of keys%s", "");
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        char key[160];
        const char *name;
        int rc = config_pair_key(c, section, map, p, key, sizeof key, &name);
        if (!rc)
            rc = fn(c, key, name, yaml_document_get_node(c->doc, p->value));
        if (rc)
            return rc;
    }
    return 0;
}

static int server_section(struct config_ctx *c, const char *name, const yaml_node_t *v)
{
    return config_walk_mapping(c, name, v, server_key);
}

static int scheduler_section(struct config_ctx *c, const char *name, const yaml_node_t *v)
{
    return config_walk_mapping(c, name, v, scheduler_key);
}

/* sim: the simulator's run settings (docs/sim.md); tide sim reads and
 * checks them, the server has nothing to do with them. */
static int sim_section(struct config_ctx *c, const char *name, const yaml_node_t *v)
{
    if (v->type != YAML_MAPPING_NODE)
        return config_fail(c, v, name, "must be a mapping of keys%s", "");
    return 0;
}

/* One entry per top-level section; a feature adds its own (in its own file). */
static const struct {
    const char *name;
    int (*parse)(struct config_ctx *c, const char *name, const yaml_node_t *value);
} sections[] = {
    {"pools", config_section_pools},
    {"server", server_section},
    {"scheduler", scheduler_section},
    {"queues", config_section_queues},
    {"projects", config_section_projects},
    {"retention", config_section_retention},
    {"sim", sim_section},
};

static int walk_root(struct config_ctx *c, const yaml_node_t *root)
{
    if (!root)
        return 0; /* an empty file: all defaults */
    if (root->type != YAML_MAPPING_NODE)
        return config_fail(c, root, "(top)", "the file must be a mapping of sections%s", "");
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        char key[160];
        const char *name;
        int rc = config_pair_key(c, NULL, root, p, key, sizeof key, &name);
        if (rc)
            return rc;
        bool known = false;
        for (size_t i = 0; !known && i < sizeof sections / sizeof sections[0]; i++)
            if (!strcmp(name, sections[i].name)) {
                known = true;
                rc = sections[i].parse(c, name, v);
            }
        if (!known && !strcmp(name, "autoscaler"))
            rc = config_fail(c, k, name, "not supported by this server yet%s", "");
        else if (!known)
            rc = config_fail(c, k, name,
                             "unknown section (known: server, scheduler, queues, projects, pools, retention, sim)%s", "");
        if (rc)
            return rc;
    }
    return 0;
}

/* parser's syntax error, with its line and column. */
static int syntax_error(const char *path, const yaml_parser_t *parser, struct tide_err *err)
{
    return tide_err_set(err, TIDE_EINVAL, "config", "%s:%lu:%lu: %s", path,
                        (unsigned long)parser->problem_mark.line + 1,
                        (unsigned long)parser->problem_mark.column + 1,
                        parser->problem ? parser->problem : "invalid YAML");
}

/* Refuses what follows the first document: libyaml's loader reads one at a
 * time, and a second (after ---) would be skipped unread, errors and all. */
static int only_one_document(const char *path, yaml_parser_t *parser, struct tide_err *err)
{
    yaml_document_t next;
    if (!yaml_parser_load(parser, &next))
        return syntax_error(path, parser, err);
    int rc = 0;
    if (yaml_document_get_root_node(&next)) /* none: the end of the file */
        rc = tide_err_set(err, TIDE_EINVAL, "config",
                          "%s:%lu: (top): a second YAML document starts here; the file must "
                          "hold only one",
                          path, (unsigned long)next.start_mark.line + 1);
    yaml_document_delete(&next);
    return rc;
}

int config_load(const char *path, struct server_config *cfg, struct sched_config *sc,
                struct tide_err *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = fs_read_file(path, 4 << 20, &text, &len);
    if (rc)
        return tide_err_set(err, TIDE_EINVAL, "config", "%s: cannot read: %s", path, strerror(-rc));
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        free(text);
        return tide_err_set(err, TIDE_ENOMEM, "config", "out of memory");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        rc = syntax_error(path, &parser, err);
        yaml_parser_delete(&parser);
        free(text);
        return rc;
    }
    struct config_ctx c = {.path = path, .doc = &doc, .cfg = cfg, .sc = sc, .err = err};
    rc = only_one_document(path, &parser, err);
    if (!rc)
        rc = walk_root(&c, yaml_document_get_root_node(&doc));
    /* Sections may come in any order: check queues' pools once all are read. */
    for (int i = 0; !rc && i < cfg->queues.count; i++)
        for (int k = 0; !rc && k < cfg->queues.queues[i].npools; k++)
            if (pool_find(cfg->pools, cfg->npools, cfg->queues.queues[i].pools[k]) < 0)
                rc = tide_err_set(err, TIDE_EINVAL, "queues", "%s: queue %s: no pool '%s' in pools:",
                                  path, cfg->queues.queues[i].name, cfg->queues.queues[i].pools[k]);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    free(text);
    return rc;
}
