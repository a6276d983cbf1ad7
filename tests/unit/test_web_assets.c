/* The dashboard's files embedded in the server (src/server/web.c): every
 * file of web/ byte for byte, exact-name lookup, content types. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/web_assets.h"

/* Reads a whole file; the caller frees. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

static void test_every_file_under_web_is_embedded_byte_for_byte(void **state)
{
    (void)state;
    DIR *d = opendir(TIDE_WEB_DIR);
    assert_non_null(d);
    size_t files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", TIDE_WEB_DIR, e->d_name);
        size_t len;
        char *want = read_file(path, &len);
        const struct web_asset *a = web_asset_find(e->d_name);
        assert_non_null(a);
        assert_int_equal(a->len, len);
        assert_memory_equal(a->data, want, len);
        assert_int_equal(a->data[len], 0);
        free(want);
        files++;
    }
    closedir(d);
    assert_true(files >= 3);
    assert_int_equal(web_assets_count, files);
}

static void test_names_with_directories_never_match(void **state)
{
    (void)state;
    assert_non_null(web_asset_find("index.html"));
    const char *bad[] = {"",
                         "/index.html",
                         "../index.html",
                         "index.html/",
                         "./index.html",
                         "web/index.html",
                         "INDEX.HTML",
                         "index.html\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_null(web_asset_find(bad[i]));
}

static void test_content_type_follows_the_extension(void **state)
{
    (void)state;
    assert_string_equal(web_content_type("index.html"), "text/html; charset=utf-8");
    assert_string_equal(web_content_type("app.js"), "text/javascript; charset=utf-8");
    assert_string_equal(web_content_type("style.css"), "text/css; charset=utf-8");
    assert_string_equal(web_content_type("favicon.svg"), "image/svg+xml");
    assert_string_equal(web_content_type("README"), "application/octet-stream");
    assert_string_equal(web_content_type("x.html.bak"), "application/octet-stream");
}

/* Everything index.html loads is one of the embedded files (no CDN). */
static void test_the_page_loads_only_files_the_server_has(void **state)
{
    (void)state;
    const struct web_asset *page = web_asset_find("index.html");
    assert_non_null(page);
    const char *p = (const char *)page->data;
    int refs = 0;
    while ((p = strpbrk(p, "sh"))) {
        const char *q = NULL;
        if (!strncmp(p, "src=\"", 5))
            q = p + 5;
        else if (!strncmp(p, "href=\"", 6))
            q = p + 6;
        p++;
        if (!q)
            continue;
        assert_true(!strncmp(q, "/static/", 8));
        char name[128];
        size_t n = strcspn(q + 8, "\"");
        assert_true(n < sizeof name);
        memcpy(name, q + 8, n);
        name[n] = '\0';
        assert_non_null(web_asset_find(name));
        refs++;
    }
    assert_true(refs >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_file_under_web_is_embedded_byte_for_byte),
        cmocka_unit_test(test_names_with_directories_never_match),
        cmocka_unit_test(test_content_type_follows_the_extension),
        cmocka_unit_test(test_the_page_loads_only_files_the_server_has),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
