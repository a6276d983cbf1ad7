/*
 * GET / and GET /static/NAME: the web dashboard (web/, embedded by the
 * build). Needs no token: the page holds no data; its API calls carry the
 * user's token. The Content-Security-Policy lets the page load and call
 * only this server, and runs no inline script.
 */
#include <microhttpd.h>
#include <string.h>

#include "server/server.h"
#include "server/web_assets.h"

#define WEB_CSP                                                                                    \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "              \
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "                   \
    "frame-ancestors 'none'"

const struct web_asset *web_asset_find(const char *name)
{
    for (size_t i = 0; i < web_assets_count; i++)
        if (!strcmp(web_assets[i].name, name))
            return &web_assets[i];
    return NULL;
}

const char *web_content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {{".html", "text/html; charset=utf-8"},
                 {".js", "text/javascript; charset=utf-8"},
                 {".css", "text/css; charset=utf-8"},
                 {".svg", "image/svg+xml"},
                 {".png", "image/png"},
                 {".ico", "image/x-icon"}};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dot, types[i].ext))
            return types[i].type;
    return "application/octet-stream";
}

int api_web_static(struct server *srv, struct api_request *req, struct api_reply *reply)
{
    (void)srv;
    const char *name = !strcmp(req->path, "/") ? "index.html" : req->path + strlen("/static/");
    const struct web_asset *a = web_asset_find(name);
    if (!a)
        return api_error_msg(reply, TIDE_ENOENT, NULL, "no file %s", req->path);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    if (MHD_add_response_header(resp, "Content-Type", web_content_type(a->name)) != MHD_YES ||
        MHD_add_response_header(resp, "Content-Security-Policy", WEB_CSP) != MHD_YES ||
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff") != MHD_YES ||
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer") != MHD_YES ||
        MHD_add_response_header(resp, "Cache-Control", "no-cache") != MHD_YES) {
        MHD_destroy_response(resp);
        return api_error_msg(reply, TIDE_ENOMEM, NULL, "out of memory");
    }
    reply->status = 200;
    reply->response = resp;
    return 0;
}
