/*
 * tide.yaml for the server: the settings of the scheduler and of the
 * server itself. A bad file is refused at start with file:line, the key and
 * the reason. Sections for later features (pools, queues, projects,
 * autoscaler) are refused by name until the server implements them.
 */
#ifndef TIDE_SERVER_CONFIG_H
#define TIDE_SERVER_CONFIG_H

#include "common/tide_err.h"
#include "core/sched.h"
#include "server/server.h"

#include <stdbool.h>
#include <yaml.h>

/* What a section parser gets: the document (for line numbers) and the
 * settings to fill. */
struct config_ctx {
    const char *path;
    yaml_document_t *doc;
    struct server_config *cfg;
    struct sched_config *sc;
    struct tide_err *err;
};

/* Called for each key of a section mapping: key is its dotted name for
 * messages ("pools[0].max_nodes"), name the key as written ("max_nodes"),
 * which is what a section matches, exactly. */
typedef int (*config_key_fn)(struct config_ctx *c, const char *key, const char *name,
                             const yaml_node_t *value);

/* Fills err with "file:line: key: reason" (fmt has one %s for detail);
 * returns TIDE_EINVAL. */
int config_fail(struct config_ctx *c, const yaml_node_t *at, const char *key, const char *fmt,
                const char *detail);
/* A scalar's text, or NULL for mappings, sequences and text with a NUL
 * inside ("\0" in double quotes), which would read as less than it is. */
const char *config_scalar(const yaml_node_t *n);
/* The key of pair p of mapping map: its text in *name, and "section.name"
 * (name alone when section is NULL) in key, size bytes, for messages.
 * Refuses, naming the key and both lines, a key that an earlier pair of
 * map has (YAML would let the last one win without a word), and a key
 * that is not text. */
int config_pair_key(struct config_ctx *c, const char *section, const yaml_node_t *map,
                    const yaml_node_pair_t *p, char *key, size_t size, const char **name);
/* An integer scalar within [lo, hi]. */
int config_want_int(struct config_ctx *c, const yaml_node_t *v, const char *key, long lo, long hi,
                    long *out);
/* true or false (common/parse_scalar.h), the one spelling of every section. */
int config_want_bool(struct config_ctx *c, const yaml_node_t *v, const char *key, bool *out);
/* "4.20" or "4" (money units) into micro-units, exactly (config_pools.c). */
int config_want_money(struct config_ctx *c, const yaml_node_t *v, const char *key, int64_t *out);
/* Calls fn for each key of mapping map (refusing anything but a mapping,
 * and keys as config_pair_key does). */
int config_walk_mapping(struct config_ctx *c, const char *section, const yaml_node_t *map,
                        config_key_fn fn);

/* Section parsers living in their own files. */
int config_section_queues(struct config_ctx *c, const char *name, const yaml_node_t *v);
int config_section_projects(struct config_ctx *c, const char *name, const yaml_node_t *v);
int config_section_retention(struct config_ctx *c, const char *name, const yaml_node_t *v);

/* tide.yaml `pools:` (config_pools.c). */
int config_section_pools(struct config_ctx *c, const char *name, const yaml_node_t *v);

/* "HOST:PORT" (localhost is 127.0.0.1) into host (size bytes) and port;
 * err names field and flag ("--listen", "--agent-listen" or the key). */
int config_host_port(const char *field, const char *flag, const char *v, char *host, size_t size,
                     int *port, struct tide_err *err);

/* Reads path and overrides the fields of cfg and sc it sets. */
int config_load(const char *path, struct server_config *cfg, struct sched_config *sc,
                struct tide_err *err);

#endif
