/*
 * report.html: one static page with inline SVG line charts (queue length,
 * GPUs in use vs provisioned, cumulative cost) for one or more runs, drawn
 * from each report's timeline. No scripts, no external files.
 */
#include <string.h>

#include "sim/sim.h"

#define W 760
#define H 220
#define PAD 48

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

static void html_text(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*s, out);
        }
    }
}

static double series_max(json_t *const *reports, size_t n, const char *key, double scale)
{
    double m = 0;
    for (size_t r = 0; r < n; r++) {
        const json_t *a = json_object_get(json_object_get(reports[r], "timeline"), key);
        for (size_t i = 0; i < json_array_size(a); i++) {
            double v = json_number_value(json_array_get(a, i)) * scale;
            if (v > m)
                m = v;
        }
    }
    return m;
}

static void polyline(FILE *out, const json_t *report, const char *key, double scale, double xmax,
                     double ymax, const char *colour, const char *dash)
{
    const json_t *tl = json_object_get(report, "timeline");
    const json_t *t = json_object_get(tl, "t_s"), *v = json_object_get(tl, key);
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s%s%s points=\"", colour,
            dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    for (size_t i = 0; i < json_array_size(v); i++) {
        double x = PAD + (W - 2 * PAD) * (xmax > 0 ? json_number_value(json_array_get(t, i)) / xmax : 0);
        double y = H - PAD + 0.0 -
                   (H - 2 * PAD) * (ymax > 0 ? json_number_value(json_array_get(v, i)) * scale / ymax : 0);
        fprintf(out, "%.1f,%.1f ", x, y);
    }
    fputs("\"/>\n", out);
}

static void chart(FILE *out, json_t *const *reports, size_t n, const char *title, const char *key,
                  const char *key2, double scale, const char *unit)
{
    double xmax = series_max(reports, n, "t_s", 1.0);
    double ymax = series_max(reports, n, key, scale);
    if (key2) {
        double m2 = series_max(reports, n, key2, scale);
        if (m2 > ymax)
            ymax = m2;
    }
    if (ymax <= 0)
        ymax = 1;
    fprintf(out, "<h2>");
    html_text(out, title);
    fprintf(out, "</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\">\n", W, H, W, H);
    fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
            PAD, PAD, W - 2 * PAD, H - 2 * PAD);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%.6g %s</text>\n",
            PAD - 4, PAD + 4, ymax, unit);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">0</text>\n", PAD - 4,
            H - PAD);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%.1f h</text>\n",
            W - PAD, H - PAD + 16, xmax / 3600.0);
    for (size_t r = 0; r < n; r++) {
        polyline(out, reports[r], key, scale, xmax, ymax, colours[r % 8], NULL);
        if (key2)
            polyline(out, reports[r], key2, scale, xmax, ymax, colours[r % 8], "4 3");
    }
    fputs("</svg>\n", out);
}

static void money_cell(FILE *out, long long micros)
{
    char text[32];
    sim_money_text(text, sizeof text, micros);
    fprintf(out, "<td>%s</td>", text);
}

/* Elastic runs: per pool, billing kind, nodes created and released, peak,
 * node-hours, cost and idle cost. */
static void elastic_table(FILE *out, json_t *const *reports, size_t n)
{
    fputs("<h2>Elastic pools</h2>\n<table><tr><th>run</th><th>pool</th><th>billing</th>"
          "<th>created</th><th>released</th><th>peak nodes</th><th>node-hours</th><th>cost</th>"
          "<th>idle</th></tr>\n",
          out);
    for (size_t r = 0; r < n; r++) {
        const json_t *el = json_object_get(reports[r], "elastic");
        const json_t *bp = json_object_get(json_object_get(reports[r], "cost"), "by_pool");
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(el, "pools"), i, p)
        {
            const json_t *c = json_array_get(bp, i);
            fputs("<tr><td>", out);
            html_text(out, json_string_value(json_object_get(json_object_get(reports[r], "config"), "name")));
            fputs("</td><td>", out);
            html_text(out, json_string_value(json_object_get(p, "pool")));
            fputs("</td><td>", out);
            html_text(out, json_string_value(json_object_get(c, "billing")));
            fprintf(out, "</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%.1f</td>",
                    (long long)json_integer_value(json_object_get(p, "created")),
                    (long long)json_integer_value(json_object_get(p, "released")),
                    (long long)json_integer_value(json_object_get(p, "peak_nodes")),
                    json_number_value(json_object_get(p, "node_hours")));
            money_cell(out, (long long)json_integer_value(json_object_get(c, "cost_micros")));
            money_cell(out, (long long)json_integer_value(json_object_get(c, "idle_micros")));
            fputs("</tr>\n", out);
        }
    }
    fputs("</table>\n", out);
}

static const char *run_name(const json_t *report)
{
    return json_string_value(json_object_get(json_object_get(report, "config"), "name"));
}

static double at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    return json_number_value(b ? json_object_get(v, b) : v);
}

/* Elastic runs: spot interruptions and provider failures, and what they
 * did to JCT and cost. */
static void cloud_table(FILE *out, json_t *const *reports, size_t n)
{
    fputs("<h2>Spot interruptions and provider failures</h2>\n<table><tr><th>run</th>"
          "<th>interruptions</th><th>jobs requeued</th><th>delay job-h</th>"
          "<th>avg JCT h, interrupted</th><th>avg JCT h, others</th><th>grace GPU-h</th>"
          "<th>grace cost</th><th>create failures</th><th>backoff s</th></tr>\n",
          out);
    for (size_t r = 0; r < n; r++) {
        const json_t *el = json_object_get(reports[r], "elastic");
        if (!el)
            continue;
        const json_t *in = json_object_get(el, "interruptions"),
                     *pr = json_object_get(el, "provider");
        fputs("<tr><td>", out);
        html_text(out, run_name(reports[r]));
        fprintf(
            out,
            "</td><td>%.0f</td><td>%.0f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>",
            at(in, "interruptions", NULL), at(in, "jobs_requeued", NULL),
            at(in, "delay_job_s", NULL) / 3600,
            json_number_value(json_object_get(
                json_object_get(json_object_get(in, "interrupted_jobs"), "jct_s"), "avg")) /
                3600,
            json_number_value(json_object_get(
                json_object_get(json_object_get(in, "other_jobs"), "jct_s"), "avg")) /
                3600,
            at(in, "grace_gpu_hours", NULL));
        money_cell(out, (long long)at(in, "grace_cost_micros", NULL));
        fprintf(out, "<td>%.0f</td><td>%.0f</td></tr>\n", at(pr, "create_failures", NULL),
                at(pr, "backoff_s", NULL));
    }
    fputs("</table>\n", out);
}

/* Runs with budgets: each project's caps and holds, then each alert. */
static void budget_tables(FILE *out, json_t *const *reports, size_t n)
{
    fputs("<h2>Budgets</h2>\n<p>Virtual time 0 (the first submit) is 1970-01-01 00:00 UTC; "
          "periods are its UTC days and calendar months.</p>\n<table><tr><th>run</th>"
          "<th>project</th><th>daily cap</th><th>monthly cap</th><th>hard cap</th><th>alerts</th>"
          "<th>held h</th><th>held job-s</th><th>jobs held</th></tr>\n",
          out);
    for (size_t r = 0; r < n; r++) {
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(json_object_get(reports[r], "budgets"), "projects"), i,
                           p)
        {
            fputs("<tr><td>", out);
            html_text(out, run_name(reports[r]));
            fputs("</td><td>", out);
            html_text(out, json_string_value(json_object_get(p, "project")));
            fputs("</td>", out);
            money_cell(out, (long long)at(p, "budget_daily_micros", NULL));
            money_cell(out, (long long)at(p, "budget_monthly_micros", NULL));
            fprintf(out, "<td>%s</td><td>%.0f</td><td>%.2f</td><td>%.0f</td><td>%.0f</td></tr>\n",
                    json_is_true(json_object_get(p, "hard_cap")) ? "yes" : "no",
                    at(p, "alerts", NULL), at(p, "held_s", NULL) / 3600, at(p, "held_job_s", NULL),
                    at(p, "jobs_held", NULL));
        }
    }
    fputs("</table>\n<h3>Alerts</h3>\n<table><tr><th>run</th><th>t h</th><th>project</th>"
          "<th>period</th><th>pct</th><th>spent</th><th>cap</th></tr>\n",
          out);
    for (size_t r = 0; r < n; r++) {
        size_t i;
        const json_t *a;
        json_array_foreach(json_object_get(json_object_get(reports[r], "budgets"), "alerts"), i, a)
        {
            fputs("<tr><td>", out);
            html_text(out, run_name(reports[r]));
            fprintf(out, "</td><td>%.2f</td><td>", at(a, "t_s", NULL) / 3600);
            html_text(out, json_string_value(json_object_get(a, "project")));
            fputs("</td><td>", out);
            html_text(out, json_string_value(json_object_get(a, "period")));
            fprintf(out, "</td><td>%.0f%%</td>", at(a, "pct", NULL));
            money_cell(out, (long long)at(a, "spent_micros", NULL));
            money_cell(out, (long long)at(a, "cap_micros", NULL));
            fputs("</tr>\n", out);
        }
    }
    fputs("</table>\n", out);
}

/* Start-time ETAs at arrival against real starts (runs with eta on). */
static void eta_table(FILE *out, json_t *const *reports, size_t n)
{
    fputs("<h2>Start-time ETAs</h2>\n<p>Each job's ETA at arrival against its real start, "
          "for the jobs that waited; error/wait is |ETA &minus; start| over the job's wait.</p>\n"
          "<table><tr><th>run</th><th>jobs</th><th>p50 |error| h</th><th>p90 |error| h</th>"
          "<th>p50 error/wait</th><th>p90 error/wait</th><th>p50 wait h</th></tr>\n",
          out);
    for (size_t r = 0; r < n; r++) {
        const json_t *w = json_object_get(json_object_get(reports[r], "eta"), "waited");
        if (!w)
            continue;
        const json_t *abs = json_object_get(w, "abs_error_s"), *rel = json_object_get(w, "rel_error");
        fputs("<tr><td>", out);
        html_text(out, run_name(reports[r]));
        fprintf(out,
                "</td><td>%lld</td><td>%.2f</td><td>%.2f</td><td>%.1f%%</td><td>%.1f%%</td>"
                "<td>%.2f</td></tr>\n",
                (long long)json_integer_value(json_object_get(w, "jobs")),
                json_number_value(json_object_get(abs, "p50")) / 3600,
                json_number_value(json_object_get(abs, "p90")) / 3600,
                100 * json_number_value(json_object_get(rel, "p50")),
                100 * json_number_value(json_object_get(rel, "p90")),
                json_number_value(json_object_get(w, "wait_s_p50")) / 3600);
    }
    fputs("</table>\n", out);
}

int sim_report_html(FILE *out, json_t *const *reports, size_t n)
{
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tide sim report</title>\n"
          "<style>body{font:14px sans-serif;margin:2em;max-width:900px}"
          "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right;"
          "border-bottom:1px solid #eee}th:first-child,td:first-child{text-align:left}</style>\n"
          "</head><body>\n<h1>tide sim report</h1>\n<p>",
          out);
    for (size_t r = 0; r < n; r++) {
        const json_t *c = json_object_get(reports[r], "config");
        fprintf(out, "<span style=\"color:%s\">&#9632; ", colours[r % 8]);
        html_text(out, json_string_value(json_object_get(c, "name")));
        fputs(" (", out);
        html_text(out, json_string_value(json_object_get(c, "policy")));
        fputs(")</span> &nbsp; ", out);
    }
    fputs("</p>\n<table><tr><th>run</th><th>jobs</th><th>avg JCT h</th><th>p95 JCT h</th>"
          "<th>avg wait "
          "h</th><th>utilisation</th><th>busy</th><th>preemptions</th><th>cost</th></tr>\n",
          out);
    for (size_t r = 0; r < n; r++) {
        const json_t *rep = reports[r];
        fputs("<tr><td>", out);
        html_text(out, json_string_value(json_object_get(json_object_get(rep, "config"), "name")));
        long long cost = (long long)json_integer_value(json_object_get(json_object_get(rep, "cost"), "total_micros"));
        const json_t *busy = json_object_get(json_object_get(rep, "utilisation"), "busy_fraction");
        char busy_s[32] = "n/a";
        if (json_is_number(busy))
            snprintf(busy_s, sizeof busy_s, "%.1f%%", 100 * json_number_value(busy));
        fprintf(
            out,
            "</td><td>%lld</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.1f%%</td>"
            "<td>%s</td><td>%lld</td>",
            (long long)json_integer_value(json_object_get(json_object_get(rep, "jobs"), "total")),
            json_number_value(json_object_get(json_object_get(rep, "jct_s"), "avg")) / 3600,
            json_number_value(json_object_get(json_object_get(rep, "jct_s"), "p95")) / 3600,
            json_number_value(json_object_get(json_object_get(rep, "wait_s"), "avg")) / 3600,
            100 * json_number_value(
                      json_object_get(json_object_get(rep, "utilisation"), "allocated_fraction")),
            busy_s, (long long)json_integer_value(json_object_get(rep, "preemptions")));
        money_cell(out, cost);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    bool elastic = false;
    for (size_t r = 0; r < n; r++)
        elastic |= json_object_get(reports[r], "elastic") != NULL;
    if (elastic) {
        elastic_table(out, reports, n);
        cloud_table(out, reports, n);
    }
    bool budgets = false;
    for (size_t r = 0; r < n; r++)
        budgets |= json_object_get(reports[r], "budgets") != NULL;
    if (budgets)
        budget_tables(out, reports, n);
    bool eta = false;
    for (size_t r = 0; r < n; r++)
        eta |= json_object_get(reports[r], "eta") != NULL;
    if (eta)
        eta_table(out, reports, n);
    chart(out, reports, n, "Queue length (pending jobs)", "queued", NULL, 1.0, "jobs");
    chart(out, reports, n, "GPUs in use (solid) vs provisioned (dashed)", "gpus_used",
          "gpus_provisioned", 1.0, "GPUs");
    chart(out, reports, n,
          elastic ? "Cost over time (billed, cumulative)" : "Cost over time (on-demand, cumulative)",
          "cost_cum_micros", NULL, 1e-6, "");
    chart(out, reports, n, "Fragmentation (free GPUs on partly used nodes / free GPUs)",
          "fragmentation", NULL, 1.0, "");
    if (elastic)
        fputs("<p>Elastic runs: cost metered by the core's billing per node and billing kind, "
              "from 0 to the last finish; fixed-size runs: on-demand prices.</p>\n</body></html>\n",
              out);
    else
        fputs("<p>A fixed-size cluster at on-demand prices; pools with max_nodes run elastic, "
              "metered by the core's billing.</p>\n</body></html>\n",
              out);
    return ferror(out) ? -1 : 0;
}
