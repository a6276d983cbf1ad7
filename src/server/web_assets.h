/*
 * The web dashboard's static files (web/), compiled into the binary at
 * build time by cmake/embed_files.cmake, and the handler that serves them
 * on GET / and GET /static/NAME without a token (web.c).
 */
#ifndef TIDE_WEB_ASSETS_H
#define TIDE_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
    const char *name;          /* file name under web/, no directories */
    const unsigned char *data; /* NUL-terminated; the NUL is not counted in len */
    size_t len;
};

extern const struct web_asset web_assets[];
extern const size_t web_assets_count;

/* The asset called name, or NULL. Names are matched exactly, so a path
 * with "/" or ".." never matches. */
const struct web_asset *web_asset_find(const char *name);

/* The Content-Type for a file name, by its extension. */
const char *web_content_type(const char *name);

#endif
