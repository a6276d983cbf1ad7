/*
 * Faults injected into fake GPUs (`tide agent --fake-fault-file PATH`): a
 * test appends lines to the file and the agent reports them as if NVML had
 * seen them, so every fault path runs end to end without hardware.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gpu_fake.h"

/* One line "INDEX KIND [VALUE]" into *index and what ("xid 79"); false
 * when it is not one. */
static bool parse_line(const char *line, size_t len, int *index, char *what, size_t size,
                       bool *node_wide)
{
    char buf[128], kind[16];
    if (len >= sizeof buf)
        return false;
    memcpy(buf, line, len);
    buf[len] = '\0';
    long long value = 0;
    int idx = -1, used = 0;
    int n = sscanf(buf, "%d %15s %n", &idx, kind, &used);
    if (n < 2 || idx < 0 || idx >= GPU_MAX_DEVICES)
        return false;
    const char *rest = buf + used;
    bool has_value = false;
    if (*rest) {
        char *end;
        value = strtoll(rest, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        if (end == rest || *end || value < 0 || value > 1000000)
            return false;
        has_value = true;
    }
    *node_wide = false;
    if (!strcmp(kind, "lost")) {
        if (has_value)
            return false;
        *node_wide = true;
        snprintf(what, size, "lost (fell off the bus)");
    } else if (!strcmp(kind, "xid") || !strcmp(kind, "ecc") || !strcmp(kind, "temp")) {
        if (!has_value)
            return false;
        snprintf(what, size, "%s %lld", kind, value);
    } else {
        return false;
    }
    *index = idx;
    return true;
}

int gpu_fake_parse_faults(const char *text, const struct gpu_device *devices, size_t count,
                          struct gpu_health *out, int *bad_line)
{
    for (size_t i = 0; i < count; i++)
        memset(&out[i], 0, sizeof out[i]);
    *bad_line = 0;
    int lineno = 0;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        lineno++;
        const char *s = p;
        size_t n = len;
        while (n && isspace((unsigned char)*s))
            s++, n--;
        while (n && isspace((unsigned char)s[n - 1]))
            n--;
        p += len + (p[len] == '\n');
        if (n == 0 || *s == '#')
            continue;
        int index;
        char what[48];
        bool node_wide;
        if (!parse_line(s, n, &index, what, sizeof what, &node_wide)) {
            if (!*bad_line)
                *bad_line = lineno;
            continue;
        }
        unsigned long long xid;
        if (sscanf(what, "xid %llu", &xid) == 1 && gpu_xid_is_a_programs(xid))
            continue; /* as NVML's: the job's bug, not the GPU's fault */
        size_t d = 0;
        while (d < count && devices[d].index != index)
            d++;
        if (d == count) {
            if (!*bad_line)
                *bad_line = lineno;
            continue;
        }
        out[d].seq++;
        snprintf(out[d].what, sizeof out[d].what, "%s", what);
        out[d].node_wide |= node_wide;
    }
    return *bad_line ? TIDE_EINVAL : 0;
}
