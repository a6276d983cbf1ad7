/* Compact JSON text straight into one buffer (see json_write.h). */
#include "common/json_write.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes (and a NUL); false once anything failed. */
static bool reserve(struct json_buf *o, size_t n)
{
    if (o->failed)
        return false;
    if (o->len + n + 1 <= o->cap)
        return true;
    size_t cap = o->cap ? o->cap : 512;
    while (cap < o->len + n + 1)
        cap *= 2;
    char *grown = realloc(o->data, cap);
    if (!grown) {
        o->failed = true;
        return false;
    }
    o->data = grown;
    o->cap = cap;
    return true;
}

static void put(struct json_buf *o, const char *s, size_t n)
{
    if (!reserve(o, n))
        return;
    memcpy(o->data + o->len, s, n);
    o->len += n;
}

static void put_char(struct json_buf *o, char c)
{
    if (reserve(o, 1))
        o->data[o->len++] = c;
}

/* Length of the well-formed UTF-8 sequence at s (at most n bytes), 0 when
 * it is not one: overlong forms, surrogates and code points past U+10FFFF
 * are refused, as jansson refuses them. */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t size;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf)
        size = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        size = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        size = 4, cp = c & 0x07;
    else
        return 0;
    if (size > n)
        return 0;
    for (size_t i = 1; i < size; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((size == 3 && cp < 0x800) || (size == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return size;
}

/* s as a JSON string: runs that need no escape are copied whole. */
static void put_string(struct json_buf *o, const char *str, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *s = (const unsigned char *)str;
    put_char(o, '"');
    size_t run = 0; /* start of the bytes not yet copied */
    for (size_t i = 0; i < n && !o->failed;) {
        unsigned char c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            while (++i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
                ;
            continue;
        }
        if (c >= 0x80) {
            size_t size = utf8_sequence(s + i, n - i);
            if (!size)
                o->failed = true;
            i += size;
            continue;
        }
        put(o, str + run, i - run);
        char esc[6] = {'\\', 0};
        size_t len = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 0xf];
            len = 6;
        }
        put(o, esc, len);
        run = ++i;
    }
    put(o, str + run, n - run);
    put_char(o, '"');
}

static void put_integer(struct json_buf *o, json_int_t v)
{
    char buf[24];
    size_t i = sizeof buf;
    /* unsigned arithmetic, so the most negative value has a magnitude too */
    unsigned long long m = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        buf[--i] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    if (v < 0)
        buf[--i] = '-';
    put(o, buf + i, sizeof buf - i);
}

static const uint64_t pow10_u64[18] = {1ULL,
                                       10ULL,
                                       100ULL,
                                       1000ULL,
                                       10000ULL,
                                       100000ULL,
                                       1000000ULL,
                                       10000000ULL,
                                       100000000ULL,
                                       1000000000ULL,
                                       10000000000ULL,
                                       100000000000ULL,
                                       1000000000000ULL,
                                       10000000000000ULL,
                                       100000000000000ULL,
                                       1000000000000000ULL,
                                       10000000000000000ULL,
                                       100000000000000000ULL};

/* printf's "%.17g" of v into buf (returns the length; 0 when v is not in
 * the range done here) for 1 <= |v| < 2^53, which covers every time in
 * seconds a reply carries, by integer arithmetic on the exact binary
 * value: the same digits and the same round-half-even as glibc's exact
 * conversion, at a tenth of its cost. v = m / 2^shift with m < 2^53; the
 * 17 significant digits are m * 10^F / 2^shift rounded, with F digits
 * after the point; %g then drops trailing zeros and a bare point. */
static size_t real_fixed17(double v, char buf[40])
{
    double a = fabs(v);
    if (!(a >= 1.0 && a < 9007199254740992.0))
        return 0;
    int e2;
    uint64_t m = (uint64_t)ldexp(frexp(a, &e2), 53); /* exact: a = m * 2^(e2 - 53) */
    int shift = 53 - e2;                            /* 0..52, as 1 <= a < 2^53 */
    uint64_t whole = m >> shift;
    int digits = 1;
    while (digits < 17 && whole >= pow10_u64[digits])
        digits++;
    int f = 17 - digits; /* 1..16 */
    unsigned __int128 n = (unsigned __int128)m * pow10_u64[f]; /* < 2^107 */
    unsigned __int128 q = n >> shift, rest = n - (q << shift);
    if (shift) {
        unsigned __int128 half = (unsigned __int128)1 << (shift - 1);
        if (rest > half || (rest == half && (q & 1)))
            q++;
    }
    if (q >= pow10_u64[17])
        return 0; /* rounded up to one more digit: left to printf */
    uint64_t q64 = (uint64_t)q, ip = q64 / pow10_u64[f], fp = q64 % pow10_u64[f];
    size_t len = 0;
    if (v < 0)
        buf[len++] = '-';
    char tmp[20];
    int t = 0;
    do {
        tmp[t++] = (char)('0' + ip % 10);
        ip /= 10;
    } while (ip);
    while (t)
        buf[len++] = tmp[--t];
    while (f > 0 && fp % 10 == 0) { /* %g drops trailing zeros */
        fp /= 10;
        f--;
    }
    if (f > 0) {
        buf[len++] = '.';
        for (int i = f - 1; i >= 0; i--) {
            buf[len + (size_t)i] = (char)('0' + fp % 10);
            fp /= 10;
        }
        len += (size_t)f;
    }
    buf[len] = '\0';
    return len;
}

/* As jansson writes a real: 17 significant digits, always a '.' or an
 * exponent (so it reads back as a real), no '+' or leading zeros in the
 * exponent. */
static void put_real(struct json_buf *o, double v)
{
    if (!isfinite(v)) {
        o->failed = true;
        return;
    }
    char buf[40];
    size_t fast = real_fixed17(v, buf);
    if (fast) {
        if (!memchr(buf, '.', fast)) {
            memcpy(buf + fast, ".0", 3);
            fast += 2;
        }
        put(o, buf, fast);
        return;
    }
    int n = snprintf(buf, sizeof buf - 3, "%.17g", v);
    if (n < 0 || (size_t)n >= sizeof buf - 3) {
        o->failed = true;
        return;
    }
    size_t len = (size_t)n;
    char *e = strchr(buf, 'e');
    if (!e && !strchr(buf, '.')) {
        memcpy(buf + len, ".0", 3);
        len += 2;
    }
    if (e) {
        char *digits = e + 1 + (e[1] == '-'), *from = e + 1;
        while (*from == '+' || *from == '-' || (*from == '0' && from[1]))
            from++;
        if (from != digits) {
            memmove(digits, from, len - (size_t)(from - buf) + 1);
            len -= (size_t)(from - digits);
        }
    }
    put(o, buf, len);
}

static void put_value(struct json_buf *o, const json_t *v, int depth)
{
    if (depth > JSON_WRITE_MAX_DEPTH) {
        o->failed = true;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        put_char(o, '{');
        bool first = true;
        for (void *it = json_object_iter((json_t *)v); it && !o->failed;
             it = json_object_iter_next((json_t *)v, it)) {
            if (!first)
                put_char(o, ',');
            first = false;
            const char *key = json_object_iter_key(it);
#if JANSSON_VERSION_HEX >= 0x020e00 /* keys may hold a NUL since 2.14 */
            put_string(o, key, json_object_iter_key_len(it));
#else
            put_string(o, key, strlen(key));
#endif
            put_char(o, ':');
            put_value(o, json_object_iter_value(it), depth + 1);
        }
        put_char(o, '}');
        break;
    }
    case JSON_ARRAY: {
        put_char(o, '[');
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n && !o->failed; i++) {
            if (i)
                put_char(o, ',');
            put_value(o, json_array_get(v, i), depth + 1);
        }
        put_char(o, ']');
        break;
    }
    case JSON_STRING:
        put_string(o, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        put_integer(o, json_integer_value(v));
        break;
    case JSON_REAL:
        put_real(o, json_real_value(v));
        break;
    case JSON_TRUE:
        put(o, "true", 4);
        break;
    case JSON_FALSE:
        put(o, "false", 5);
        break;
    case JSON_NULL:
        put(o, "null", 4);
        break;
    }
}

void json_buf_text(struct json_buf *b, const char *text)
{
    put(b, text, strlen(text));
}

void json_buf_string(struct json_buf *b, const char *s)
{
    put_string(b, s, strlen(s));
}

void json_buf_integer(struct json_buf *b, json_int_t v)
{
    put_integer(b, v);
}

void json_buf_real(struct json_buf *b, double v)
{
    put_real(b, v);
}

char *json_buf_finish(struct json_buf *b, size_t *len)
{
    if (!reserve(b, 0)) {
        free(b->data);
        *b = (struct json_buf){0};
        return NULL;
    }
    char *text = b->data;
    text[b->len] = '\0';
    if (len)
        *len = b->len;
    *b = (struct json_buf){0};
    return text;
}

void json_buf_release(struct json_buf *b)
{
    free(b->data);
    *b = (struct json_buf){0};
}

char *json_write_compact(const json_t *v, bool newline, size_t *len)
{
    struct json_buf b = {0};
    if (!v || !reserve(&b, 256))
        return NULL;
    put_value(&b, v, 0);
    if (newline)
        put_char(&b, '\n');
    return json_buf_finish(&b, len);
}
