/* Registration and WORK/node.json (agent_node.h). */
#include "agent/agent_node.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_images.h"
#include "common/fsutil.h"
#include "common/http_client.h"
#include "common/log.h"

#define NODE_FILE_MAX (64 * 1024)
#define REGISTER_TIMEOUT_MS 10000

static char *node_file_path(const struct agent *a)
{
    char *p = NULL;
    return asprintf(&p, "%s/node.json", a->work_dir) < 0 ? NULL : p;
}

int agent_node_load(struct agent *a, struct tide_err *err)
{
    char *path = node_file_path(a);
    if (!path)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    char *text = NULL;
    int e = fs_read_file(path, NODE_FILE_MAX, &text, NULL);
    if (e != 0) {
        int rc = tide_err_set(err, TIDE_ENOENT, NULL, "%s: %s", path, strerror(-e));
        free(path);
        return rc;
    }
    /* the node token, readable by others, is any job's to heartbeat with
     * (WORK is 0711): owner-only, and said */
    int private_rc = fs_make_private(path);
    if (private_rc)
        log_warn("%s is readable by others and cannot be made private: %s", path,
                 strerror(-private_rc));
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    free(text);
    const char *server = NULL, *name = NULL, *token = NULL;
    json_int_t id = 0;
    int interval = 0;
    int rc = 0;
    if (!root ||
        json_unpack(root, "{s:s, s:s, s:I, s:s, s?:i}", "server", &server, "name", &name, "node_id",
                    &id, "node_token", &token, "heartbeat_interval_ms", &interval) != 0) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "%s is not a node file; registering anew", path);
    } else if ((strcmp(server, a->opts->server_url) != 0 &&
                !agent_servers_has(&a->servers, server)) ||
               strcmp(name, a->opts->name) != 0) {
        rc = tide_err_set(err, TIDE_ENOENT, NULL, "%s belongs to node '%s' of %s; registering anew",
                          path, name, server);
    } else {
        char *copy = strdup(token);
        if (!copy) {
            rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
        } else {
            agent_node_release(&a->node);
            a->node.node_id = id;
            a->node.node_token = copy;
            a->node.heartbeat_ms = interval > 0 ? interval : 0;
        }
    }
    json_decref(root);
    free(path);
    return rc;
}

static int node_save(const struct agent *a, struct tide_err *err)
{
    /* the first URL: any of the list finds it again (agent_node_load) */
    json_t *root = json_pack("{s:s, s:s, s:I, s:s, s:i}", "server", a->opts->server_urls[0], "name",
                             a->opts->name, "node_id", (json_int_t)a->node.node_id, "node_token",
                             a->node.node_token, "heartbeat_interval_ms", a->node.heartbeat_ms);
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    char *path = node_file_path(a);
    int rc = 0;
    if (!text || !path) {
        rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    } else {
        /* the node token is a credential: owner-only, like the server's */
        int e = fs_write_file_atomic(path, text, strlen(text), 0600);
        if (e != 0)
            rc = tide_err_set(err, TIDE_EIO, NULL, "cannot write %s: %s", path, strerror(-e));
    }
    free(text);
    free(path);
    return rc;
}

static json_t *register_body_base(const struct agent *a);

/* The registration: the node, its GPUs, and the images it holds. */
static json_t *register_body(const struct agent *a)
{
    json_t *body = register_body_base(a);
    json_t *images = agent_images_json(a);
    if (body && images && json_object_set_new(body, "images", images) != 0) {
        json_decref(body);
        return NULL;
    }
    if (!body)
        json_decref(images);
    return body;
}

static json_t *register_body_base(const struct agent *a)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "%s", a->opts->name);
    host[sizeof host - 1] = '\0';
    json_t *gpus = json_array();
    for (size_t i = 0; gpus && i < a->gpus.count; i++) {
        const struct gpu_device *d = &a->gpus.devices[i];
        json_t *g = json_pack("{s:i, s:s, s:s, s:I, s:b}", "index", d->index, "uuid", d->uuid,
                              "name", d->name, "memory_total_mib", (json_int_t)d->memory_total_mib,
                              "mig_mode", d->mig_mode);
        if (g && d->mig_profile[0] &&
            (json_object_set_new(g, "mig_profile", json_string(d->mig_profile)) != 0 ||
             json_object_set_new(g, "parent_index", json_integer(d->parent_index)) != 0)) {
            json_decref(g);
            g = NULL;
        }
        if (!g || json_array_append_new(gpus, g) != 0) {
            json_decref(gpus);
            return NULL;
        }
    }
    if (!gpus)
        return NULL;
    if (a->opts->pool) {
        json_t *body = json_pack("{s:s, s:s, s:i, s:I, s:s, s:o, s:s}", "name", a->opts->name,
                                 "hostname", host, "cpus", a->opts->cpus, "memory_mib",
                                 (json_int_t)a->opts->memory_mib, "driver", a->gpus.driver,
                                 "gpus", gpus, "pool", a->opts->pool);
        return body;
    }
    return json_pack("{s:s, s:s, s:i, s:I, s:s, s:o}", "name", a->opts->name, "hostname", host,
                     "cpus", a->opts->cpus, "memory_mib", (json_int_t)a->opts->memory_mib, "driver",
                     a->gpus.driver, "gpus", gpus);
}

int agent_node_register(struct agent *a, struct tide_err *err)
{
    if (!a->opts->join_token)
        return tide_err_set(err, TIDE_EAUTH, "--token",
                            "cannot register: no join token (--token, --token-file or "
                            "TIDE_JOIN_TOKEN)");
    json_t *body = register_body(a);
    /* this run's id: a registration sent again after its answer was lost
     * is told from another agent taking the live node's name */
    if (body && json_object_set_new(body, "run", json_string(a->heartbeat_run))) {
        json_decref(body);
        body = NULL;
    }
    /* the first health probe's result (agent_loop.c waits for it), so a
     * failing node is drained from the moment it joins */
    if (body && a->probe.has_result &&
        json_object_set_new(body, "health_probe",
                            json_pack("{s:b, s:s}", "ok", a->probe.ok, "output", a->probe.output))) {
        json_decref(body);
        body = NULL;
    }
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
    struct http_response resp;
    int rc = agent_servers_request(&a->servers, "POST", "/v1/agent/register", a->opts->join_token,
                                   text, REGISTER_TIMEOUT_MS, &resp, err);
    free(text);
    if (rc != 0)
        return TIDE_EIO;
    char msg[512];
    if (resp.status == 401 || resp.status == 403) {
        rc = tide_err_set(err, TIDE_EAUTH, "--token", "register refused the join token: %s",
                          agent_server_message(&resp, msg, sizeof msg));
    } else if (resp.status >= 500 || resp.status == 0) {
        rc = tide_err_set(err, TIDE_EIO, NULL, "register failed: %s",
                          agent_server_message(&resp, msg, sizeof msg));
    } else if (resp.status == 409) {
        /* the name's node is alive: another agent's, or this one's whose
         * registration answer was lost to a server that then restarted
         * (it forgot the run): it is free once the node is lost */
        rc = tide_err_set(err, TIDE_EBUSY, NULL, "register: %s",
                          agent_server_message(&resp, msg, sizeof msg));
    } else if (resp.status != 200 && resp.status != 201) {
        rc = tide_err_set(err, TIDE_EINVAL, NULL, "register refused: %s",
                          agent_server_message(&resp, msg, sizeof msg));
    } else {
        json_t *root = json_loads(resp.body, 0, NULL);
        json_t *epoch = json_object_get(root, "epoch");
        if (json_is_integer(epoch))
            agent_servers_epoch_ok(&a->servers, json_integer_value(epoch));
        json_int_t id = 0;
        const char *token = NULL;
        int interval = 0;
        if (!root ||
            json_unpack(root, "{s:I, s:s, s?:i}", "node_id", &id, "node_token", &token,
                        "heartbeat_interval_ms", &interval) != 0 ||
            !*token) {
            rc = tide_err_set(err, TIDE_EINVAL, NULL,
                              "register answered without node_id and node_token");
        } else {
            char *copy = strdup(token);
            if (!copy) {
                rc = tide_err_set(err, TIDE_ENOMEM, NULL, "out of memory");
            } else {
                agent_node_release(&a->node);
                a->node.node_id = id;
                a->node.node_token = copy;
                a->node.heartbeat_ms = interval > 0 ? interval : 0;
                rc = node_save(a, err);
                if (rc != 0) {
                    /* still usable for this run; the next start registers again */
                    log_warn("%s", err ? err->message : "cannot save node.json");
                    rc = 0;
                }
            }
        }
        json_decref(root);
    }
    http_response_release(&resp);
    return rc;
}

void agent_node_release(struct agent_node *node)
{
    if (!node)
        return;
    free(node->node_token);
    memset(node, 0, sizeof *node);
}
