/* Compact JSON text of a jansson value (json_text.h). */
#include "common/json_text.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_TEXT_MAX_DEPTH 64

struct buf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *grown = realloc(b->p, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->p = grown;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void put_char(struct buf *b, char c)
{
    put(b, &c, 1);
}

/* A string with jansson's escapes: " and \, \b \f \n \r \t, other
 * control characters as \u00XX; the rest (UTF-8 included) as it is. */
static void put_string(struct buf *b, const char *s, size_t n)
{
    put_char(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(b, s + run, i - run);
        run = i + 1;
        char esc[8];
        switch (c) {
        case '"': put(b, "\\\"", 2); break;
        case '\\': put(b, "\\\\", 2); break;
        case '\b': put(b, "\\b", 2); break;
        case '\f': put(b, "\\f", 2); break;
        case '\n': put(b, "\\n", 2); break;
        case '\r': put(b, "\\r", 2); break;
        case '\t': put(b, "\\t", 2); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", c);
            put(b, esc, 6);
        }
    }
    put(b, s + run, n - run);
    put_char(b, '"');
}

/* Decimal digits of v without printf. */
static void put_integer(struct buf *b, json_int_t v)
{
    char digits[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        digits[sizeof digits - 1 - n++] = '-';
    put(b, digits + sizeof digits - n, (size_t)n);
}

/* As jansson writes a real: %.17g, with ".0" when that reads as an
 * integer, and an exponent without its '+' and leading zeros. */
static void put_real(struct buf *b, double d)
{
    char text[48];
    int n = snprintf(text, sizeof text, "%.17g", d);
    if (n < 0 || (size_t)n >= sizeof text - 2) {
        b->failed = true;
        return;
    }
    char *e = strchr(text, 'e');
    if (e) {
        char *from = e + 1, *to = e + 1;
        if (*from == '-')
            *to++ = *from++;
        else if (*from == '+')
            from++;
        while (*from == '0' && from[1])
            from++;
        memmove(to, from, strlen(from) + 1);
    } else if (!strchr(text, '.')) {
        strcat(text, ".0");
    }
    put(b, text, strlen(text));
}

static void put_value(struct buf *b, const json_t *v, int depth)
{
    if (depth > JSON_TEXT_MAX_DEPTH) {
        b->failed = true;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        put_char(b, '{');
        const char *key;
        size_t key_len;
        json_t *member;
        bool first = true;
        json_object_keylen_foreach((json_t *)v, key, key_len, member)
        {
            if (!first)
                put_char(b, ',');
            first = false;
            put_string(b, key, key_len);
            put_char(b, ':');
            put_value(b, member, depth + 1);
        }
        put_char(b, '}');
        break;
    }
    case JSON_ARRAY: {
        put_char(b, '[');
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            if (i)
                put_char(b, ',');
            put_value(b, item, depth + 1);
        }
        put_char(b, ']');
        break;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        put_integer(b, json_integer_value(v));
        break;
    case JSON_REAL:
        put_real(b, json_real_value(v));
        break;
    case JSON_TRUE:
        put(b, "true", 4);
        break;
    case JSON_FALSE:
        put(b, "false", 5);
        break;
    case JSON_NULL:
        put(b, "null", 4);
        break;
    }
}

char *json_text_compact(const json_t *v)
{
    if (!v)
        return NULL;
    struct buf b = {0};
    put_value(&b, v, 0);
    if (!b.failed)
        put(&b, "", 0); /* room for the NUL */
    if (b.failed || !b.p) {
        free(b.p);
        return NULL;
    }
    b.p[b.len] = '\0';
    return b.p;
}
