/* Human renderings of durations and times (see fmt.h). */
#include "cli/fmt.h"

#include <stdio.h>
#include <time.h>

#include "common/fsutil.h"

void cli_fmt_duration(double seconds, char *buf, size_t size)
{
    long long s = seconds > 0 ? (long long)seconds : 0;
    if (s < 60)
        snprintf(buf, size, "%llds", s);
    else if (s < 3600)
        snprintf(buf, size, "%lldm", s / 60);
    else if (s < 86400)
        snprintf(buf, size, "%lldh", s / 3600);
    else
        snprintf(buf, size, "%lldd", s / 86400);
}

double cli_now(void)
{
    return (double)clock_now_ms() / 1000.0;
}

void cli_fmt_time(json_t *v, char *buf, size_t size)
{
    if (!json_is_number(v)) {
        snprintf(buf, size, "-");
        return;
    }
    double t = json_number_value(v);
    time_t secs = (time_t)t;
    struct tm tm;
    char when[32] = "?";
    if (localtime_r(&secs, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    char age[32];
    double delta = cli_now() - t;
    cli_fmt_duration(delta < 0 ? -delta : delta, age, sizeof age);
    snprintf(buf, size, "%s (%s %s)", when, age, delta < 0 ? "from now" : "ago");
}

void cli_fmt_eta(json_t *eta, int long_form, char *buf, size_t size)
{
    json_t *in = json_object_get(eta, "in_s");
    const char *basis = cli_json_text(json_object_get(eta, "basis"), "unknown");
    if (!json_is_object(eta) || !json_is_number(in)) {
        snprintf(buf, size, long_form && json_is_object(eta) ? "unknown (basis %s)" : "-", basis);
        return;
    }
    char rel[32] = "now";
    if (json_number_value(in) > 0) {
        char d[24];
        cli_fmt_duration(json_number_value(in), d, sizeof d);
        snprintf(rel, sizeof rel, "in %s", d);
    }
    if (!long_form) {
        snprintf(buf, size, "%s", rel);
        return;
    }
    time_t secs = (time_t)cli_json_number(json_object_get(eta, "start_time"), 0);
    struct tm tm;
    char when[32] = "?";
    if (localtime_r(&secs, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, size, "%s at %s (basis %s)", rel, when, basis);
}

double cli_json_number(json_t *v, double fallback)
{
    return json_is_number(v) ? json_number_value(v) : fallback;
}

const char *cli_json_text(json_t *v, const char *fallback)
{
    return json_is_string(v) ? json_string_value(v) : fallback;
}
