/* A request body read as a JSON object of known fields (server.h). */
#include <string.h>

#include "server/server.h"

json_t *api_body_object(const struct api_request *req, const char *const *known,
                        struct api_reply *reply)
{
    json_error_t jerr;
    json_t *body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(body)) {
        json_decref(body);
        api_error_msg(reply, TIDE_EINVAL, NULL, "body must be a JSON object");
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        const char *const *k = known;
        while (*k && strcmp(*k, key))
            k++;
        if (!*k) {
            api_error_msg(reply, TIDE_EINVAL, key, "%.64s: unknown field", key);
            json_decref(body);
            return NULL;
        }
    }
    return body;
}
