/*
 * YAML to JSON over libyaml's event parser: a recursive descent that builds
 * jansson values as events arrive. Aliases are deep copies of their anchor,
 * counted against a value budget so a "billion laughs" file fails instead of
 * eating memory; nesting is bounded so the recursion is too.
 */
#include "cli/yaml_json.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YJ_MAX_DEPTH 64
#define YJ_MAX_VALUES 200000

struct yj {
    yaml_parser_t parser;
    const char *name;
    json_t *anchors; /* anchor name -> finished value */
    size_t values;   /* values created so far, aliases included */
    bool config;     /* tide.yaml: numbers and booleans as the server reads them */
    struct tide_err *err;
    const char *const *text_keys; /* top-level keys whose plain scalars stay text */
    bool as_text;                 /* within the value of one of them */
};

static int yj_fail(struct yj *y, yaml_mark_t mark, const char *field, const char *what)
{
    return tide_err_set(y->err, TIDE_EINVAL, field, "%s:%zu:%zu: %s", y->name, mark.line + 1,
                        mark.column + 1, what);
}

static int yj_syntax_error(struct yj *y)
{
    yaml_parser_t *p = &y->parser;
    const char *problem = p->problem ? p->problem : "invalid YAML";
    if (p->error == YAML_MEMORY_ERROR)
        return tide_err_set(y->err, TIDE_ENOMEM, NULL, "%s: out of memory", y->name);
    if (p->error == YAML_READER_ERROR)
        return tide_err_set(y->err, TIDE_EINVAL, NULL, "%s: byte %zu: %s", y->name,
                            p->problem_offset, problem);
    if (p->context)
        return tide_err_set(y->err, TIDE_EINVAL, NULL, "%s:%zu:%zu: %s (%s at line %zu, column %zu)",
                            y->name, p->problem_mark.line + 1, p->problem_mark.column + 1,
                            problem, p->context, p->context_mark.line + 1,
                            p->context_mark.column + 1);
    return yj_fail(y, p->problem_mark, NULL, problem);
}

static int yj_next(struct yj *y, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&y->parser, ev))
        return yj_syntax_error(y);
    return 0;
}

static int yj_count(struct yj *y, size_t n, yaml_mark_t mark)
{
    if (y->values + n > YJ_MAX_VALUES)
        return yj_fail(y, mark, NULL, "document too large (more than 200000 values, aliases "
                                      "expanded)");
    y->values += n;
    return 0;
}

static int all_of(const char *s, size_t n, const char *set)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(set, s[i]))
            return 0;
    return 1;
}

static int is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (!strcmp(s, *words))
            return 1;
    return 0;
}

/* [-+]? ( . digits | digits ( . digits? )? ) ( [eE] [-+]? digits )? */
static int looks_like_float(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    size_t before = strspn(s, "0123456789");
    s += before;
    size_t after = 0;
    if (*s == '.') {
        s++;
        after = strspn(s, "0123456789");
        s += after;
    }
    if (before == 0 && after == 0)
        return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        size_t exp = strspn(s, "0123456789");
        if (exp == 0)
            return 0;
        s += exp;
    }
    return *s == '\0';
}

/* Resolves a plain scalar by the YAML 1.2 core schema (narrowed for
 * tide.yaml when config is set). Returns the new value, or NULL with
 * *problem set when it is a number JSON cannot hold. */
static json_t *yj_plain(const char *s, size_t n, bool config, const char **problem)
{
    static const char *const other_cases[] = {"True", "TRUE", "False", "FALSE", NULL};
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    static const char *const specials[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF",
                                           "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN",
                                           NULL};
    *problem = NULL;
    if (strlen(s) != n) /* a NUL inside: cannot be a number or keyword */
        return json_stringn(s, n);
    if (config && (s[0] == '+' || is_one_of(s, other_cases)))
        return json_stringn(s, n);
    if (is_one_of(s, nulls))
        return json_null();
    if (is_one_of(s, trues))
        return json_true();
    if (is_one_of(s, falses))
        return json_false();
    if (is_one_of(s, specials)) {
        *problem = "infinity and NaN cannot be represented in JSON";
        return NULL;
    }
    const char *digits = (*s == '-' || *s == '+') ? s + 1 : s;
    int base = 0;
    if (all_of(digits, strlen(digits), "0123456789"))
        base = 10;
    else if (s[0] == '0' && s[1] == 'x' && all_of(s + 2, n - 2, "0123456789abcdefABCDEF"))
        base = 16;
    else if (s[0] == '0' && s[1] == 'o' && all_of(s + 2, n - 2, "01234567"))
        base = 8;
    if (config && base && base != 10)
        return json_stringn(s, n);
    if (base) {
        errno = 0;
        long long v = strtoll(base == 10 ? s : s + 2, NULL, base);
        if (errno == ERANGE) {
            *problem = "integer out of range";
            return NULL;
        }
        return json_integer(v);
    }
    if (looks_like_float(s)) {
        double d = strtod(s, NULL);
        if (!isfinite(d)) {
            *problem = "number out of range";
            return NULL;
        }
        return json_real(d);
    }
    return json_stringn(s, n);
}

static int yj_scalar(struct yj *y, yaml_event_t *ev, json_t **out)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    int forced_string = tag && (!strcmp(tag, YAML_STR_TAG) || !strcmp(tag, "!"));
    const char *problem = NULL;
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !forced_string && !y->as_text)
        *out = yj_plain(s, n, y->config, &problem);
    else
        *out = json_stringn(s, n);
    if (problem)
        return yj_fail(y, ev->start_mark, NULL, problem);
    if (!*out)
        return yj_fail(y, ev->start_mark, NULL, "scalar is not valid UTF-8 text");
    return 0;
}

/* Total number of values in v, stopping early once over limit. */
static size_t yj_size(json_t *v, size_t limit)
{
    size_t n = 1;
    size_t i;
    const char *key;
    json_t *child;
    if (json_is_array(v)) {
        json_array_foreach(v, i, child)
        {
            if (n > limit)
                break;
            n += yj_size(child, limit);
        }
    } else if (json_is_object(v)) {
        json_object_foreach(v, key, child)
        {
            if (n > limit)
                break;
            n += yj_size(child, limit);
        }
    }
    return n;
}

static int yj_value(struct yj *y, yaml_event_t *ev, int depth, json_t **out);

static int yj_sequence(struct yj *y, int depth, json_t *arr)
{
    for (;;) {
        yaml_event_t ev;
        int rc = yj_next(y, &ev);
        if (rc < 0)
            return rc;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        json_t *item;
        rc = yj_value(y, &ev, depth + 1, &item);
        if (rc < 0)
            return rc;
        if (json_array_append_new(arr, item) != 0)
            return tide_err_set(y->err, TIDE_ENOMEM, NULL, "%s: out of memory", y->name);
    }
}

static int yj_mapping(struct yj *y, int depth, json_t *obj)
{
    json_t *key_lines = json_object(); /* key -> line it was first seen on */
    if (!key_lines)
        return tide_err_set(y->err, TIDE_ENOMEM, NULL, "%s: out of memory", y->name);
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        rc = yj_next(y, &ev);
        if (rc < 0)
            break;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            rc = yj_fail(y, ev.start_mark, NULL, "mapping keys must be plain text, not "
                                                 "lists, mappings or aliases");
            yaml_event_delete(&ev);
            break;
        }
        char *key = strndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
        yaml_mark_t key_mark = ev.start_mark;
        yaml_event_delete(&ev);
        if (!key) {
            rc = tide_err_set(y->err, TIDE_ENOMEM, NULL, "%s: out of memory", y->name);
            break;
        }
        json_t *first = json_object_get(key_lines, key);
        if (first) {
            char what[160];
            snprintf(what, sizeof what, "duplicate key '%.80s' (first at line %lld)", key,
                     (long long)json_integer_value(first));
            rc = yj_fail(y, key_mark, key, what);
            free(key);
            break;
        }
        json_t *value;
        yaml_event_t vev;
        rc = yj_next(y, &vev);
        if (depth == 0) /* a top-level key: are its scalars text? */
            for (const char *const *k = y->text_keys; k && *k && !y->as_text; k++)
                y->as_text = !strcmp(*k, key);
        if (rc == 0)
            rc = yj_value(y, &vev, depth + 1, &value);
        if (depth == 0)
            y->as_text = false;
        if (rc == 0 && (json_object_set_new(obj, key, value) != 0 ||
                        json_object_set_new(key_lines, key,
                                            json_integer((json_int_t)key_mark.line + 1)) != 0))
            rc = yj_fail(y, key_mark, NULL, "key is not valid UTF-8 text or out of memory");
        free(key);
        if (rc < 0)
            break;
    }
    json_decref(key_lines);
    return rc;
}

static int yj_alias(struct yj *y, yaml_event_t *ev, json_t **out)
{
    const char *name = (const char *)ev->data.alias.anchor;
    json_t *target = json_object_get(y->anchors, name);
    if (!target)
        return yj_fail(y, ev->start_mark, NULL, "alias to an unknown or unfinished anchor");
    int rc = yj_count(y, yj_size(target, YJ_MAX_VALUES), ev->start_mark);
    if (rc < 0)
        return rc;
    if (y->as_text && !json_is_string(target) && !json_is_object(target) &&
        !json_is_array(target)) {
        /* an anchor read as a number or boolean elsewhere, used where text
         * is wanted: its text (the spelling is gone by now) */
        char *text = json_dumps(target, JSON_ENCODE_ANY);
        *out = text ? json_string(text) : NULL;
        free(text);
    } else {
        *out = json_deep_copy(target);
    }
    if (!*out)
        return tide_err_set(y->err, TIDE_ENOMEM, NULL, "%s: out of memory", y->name);
    return 0;
}

/* Builds the value that starts with ev (which it consumes) into *out. */
static int yj_value(struct yj *y, yaml_event_t *ev, int depth, json_t **out)
{
    *out = NULL;
    int rc = 0;
    const char *anchor = NULL;
    if (depth > YJ_MAX_DEPTH)
        rc = yj_fail(y, ev->start_mark, NULL, "nested too deeply (more than 64 levels)");
    else
        rc = yj_count(y, 1, ev->start_mark);
    if (rc == 0) {
        switch (ev->type) {
        case YAML_SCALAR_EVENT:
            anchor = (const char *)ev->data.scalar.anchor;
            rc = yj_scalar(y, ev, out);
            break;
        case YAML_SEQUENCE_START_EVENT:
            anchor = (const char *)ev->data.sequence_start.anchor;
            *out = json_array();
            rc = *out ? yj_sequence(y, depth, *out)
                      : tide_err_set(y->err, TIDE_ENOMEM, NULL, "%s: out of memory", y->name);
            break;
        case YAML_MAPPING_START_EVENT:
            anchor = (const char *)ev->data.mapping_start.anchor;
            *out = json_object();
            rc = *out ? yj_mapping(y, depth, *out)
                      : tide_err_set(y->err, TIDE_ENOMEM, NULL, "%s: out of memory", y->name);
            break;
        case YAML_ALIAS_EVENT:
            rc = yj_alias(y, ev, out);
            break;
        default:
            rc = yj_fail(y, ev->start_mark, NULL, "unexpected YAML event");
            break;
        }
    }
    if (rc == 0 && anchor && json_object_set(y->anchors, anchor, *out) != 0)
        rc = tide_err_set(y->err, TIDE_ENOMEM, NULL, "%s: out of memory", y->name);
    yaml_event_delete(ev);
    if (rc < 0) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

/* Reads the next event and checks it has the expected type. */
static int yj_expect(struct yj *y, yaml_event_type_t type, const char *what)
{
    yaml_event_t ev;
    int rc = yj_next(y, &ev);
    if (rc < 0)
        return rc;
    if (ev.type != type)
        rc = yj_fail(y, ev.start_mark, NULL, what);
    yaml_event_delete(&ev);
    return rc;
}

static int yj_document(struct yj *y, json_t **out)
{
    int rc = yj_expect(y, YAML_STREAM_START_EVENT, "expected the start of a YAML stream");
    if (rc < 0)
        return rc;
    yaml_event_t ev;
    if ((rc = yj_next(y, &ev)) < 0)
        return rc;
    if (ev.type != YAML_DOCUMENT_START_EVENT) {
        rc = yj_fail(y, ev.start_mark, NULL, "empty document");
        yaml_event_delete(&ev);
        return rc;
    }
    yaml_event_delete(&ev);
    if ((rc = yj_next(y, &ev)) < 0)
        return rc;
    if ((rc = yj_value(y, &ev, 0, out)) < 0)
        return rc;
    rc = yj_expect(y, YAML_DOCUMENT_END_EVENT, "expected the end of the document");
    if (rc == 0)
        rc = yj_expect(y, YAML_STREAM_END_EVENT, "expected a single YAML document, found "
                                                 "another one");
    if (rc < 0) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

static int yaml_to_json(const char *text, size_t len, const char *name, bool config,
                        const char *const *text_keys, json_t **out, struct tide_err *err)
{
    *out = NULL;
    struct yj y = {
        .name = name ? name : "<input>", .err = err, .config = config, .text_keys = text_keys};
    y.anchors = json_object();
    if (!y.anchors)
        return tide_err_set(err, TIDE_ENOMEM, NULL, "%s: out of memory", y.name);
    if (!yaml_parser_initialize(&y.parser)) {
        json_decref(y.anchors);
        return tide_err_set(err, TIDE_ENOMEM, NULL, "%s: out of memory", y.name);
    }
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)text, len);
    int rc = yj_document(&y, out);
    yaml_parser_delete(&y.parser);
    json_decref(y.anchors);
    return rc;
}

int cli_yaml_to_json(const char *text, size_t len, const char *name, json_t **out,
                     struct tide_err *err)
{
    return yaml_to_json(text, len, name, false, NULL, out, err);
}

int cli_yaml_to_json_keeping_text(const char *text, size_t len, const char *name,
                                  const char *const *text_keys, json_t **out, struct tide_err *err)
{
    return yaml_to_json(text, len, name, false, text_keys, out, err);
}

int cli_yaml_config_to_json(const char *text, size_t len, const char *name, json_t **out,
                            struct tide_err *err)
{
    return yaml_to_json(text, len, name, true, NULL, out, err);
}
