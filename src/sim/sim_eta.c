/*
 * Start-time ETAs in the simulator (sim_config.eta): at each arrival, after
 * that time's pass, the core's ETA plan (core/eta.h) runs on the sim's
 * cluster and queue, as the server's would, and the arriving jobs' ETAs
 * are kept; finished runs feed its learned runtimes. The report scores
 * each ETA against the job's real first start.
 */
#include <stdlib.h>
#include <string.h>

#include "core/eta.h"
#include "sim/sim.h"
#include "sim/sim_state.h"

void sim_eta_finished(struct sim_state *st, const struct job *job, int64_t t)
{
    if (st->cfg->eta && job)
        eta_estimator_observe(&st->eta_est, job->project, job->queue, t - job->start_ms);
}

int sim_eta_arrivals(struct sim_state *st, size_t from, size_t to, int64_t t)
{
    bool planned = false;
    for (size_t i = from; i < to; i++) {
        struct sim_job_result *jr = &st->res->jobs[i];
        struct job *job = jr->outcome == SIM_DONE ? cluster_find_job(&st->c, (int64_t)i + 1) : NULL;
        if (!job)
            continue;
        if (job->state != JOB_PENDING) { /* started at once */
            jr->eta_ms = t;
            jr->eta_basis = ETA_BASIS_NOW;
            continue;
        }
        if (!planned) {
            st->eta_plan.strict = st->s.cfg.order->strict && !st->s.cfg.backfill;
            int rc =
                eta_plan_run(&st->eta_plan, &st->c, &st->eta_est, st->s.order, st->s.norder, t);
            if (rc)
                return rc;
            planned = true;
            job = cluster_find_job(&st->c, (int64_t)i + 1);
        }
        if (job->eta_basis != ETA_BASIS_UNKNOWN) {
            jr->eta_ms = job->eta_start_ms;
            jr->eta_basis = job->eta_basis;
        }
    }
    return 0;
}

/* --- report --- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile positions (as in sim_report.c). */
static size_t rank_of(size_t n, int p)
{
    size_t rank = ((size_t)p * n + 99) / 100;
    return rank ? rank - 1 : 0;
}

static json_t *abs_stats(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
    long double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return json_pack("{s:f, s:f, s:f}", "avg", n ? (double)(sum / n) / 1000.0 : 0.0, "p50",
                     n ? (double)v[rank_of(n, 50)] / 1000.0 : 0.0, "p90",
                     n ? (double)v[rank_of(n, 90)] / 1000.0 : 0.0);
}

json_t *sim_eta_report_json(const struct sim_result *res)
{
    size_t n = res->njobs;
    int64_t *all = malloc((n + 1) * sizeof *all), *waited = malloc((n + 1) * sizeof *waited);
    int64_t *waits = malloc((n + 1) * sizeof *waits),
            *signed_err = malloc((n + 1) * sizeof *signed_err);
    double *rel = malloc((n + 1) * sizeof *rel);
    if (!all || !waited || !waits || !signed_err || !rel) {
        free(all), free(waited), free(waits), free(signed_err), free(rel);
        return NULL;
    }
    size_t nall = 0, nwaited = 0, unknown = 0, late = 0;
    long by_basis[ETA_BASIS_COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        const struct sim_job_result *j = &res->jobs[i];
        if (j->outcome != SIM_DONE || j->first_start_ms < 0)
            continue;
        if (j->eta_ms < 0) {
            unknown++;
            continue;
        }
        by_basis[j->eta_basis >= 0 && j->eta_basis < ETA_BASIS_COUNT ? j->eta_basis : 0]++;
        int64_t err = j->eta_ms - j->first_start_ms;
        int64_t abs_err = err < 0 ? -err : err;
        all[nall++] = abs_err;
        int64_t wait = j->first_start_ms - j->submit_ms;
        if (wait <= 0)
            continue;
        waits[nwaited] = wait;
        signed_err[nwaited] = err;
        rel[nwaited] = (double)abs_err / (double)wait;
        waited[nwaited++] = abs_err;
        late += err > 0;
    }
    json_t *basis = json_object();
    for (int b = 0; b < ETA_BASIS_COUNT; b++)
        if (by_basis[b])
            json_object_set_new(basis, eta_basis_name((enum eta_basis)b),
                                json_integer(by_basis[b]));
    qsort(waits, nwaited, sizeof *waits, cmp_i64);
    qsort(signed_err, nwaited, sizeof *signed_err, cmp_i64);
    qsort(rel, nwaited, sizeof *rel, cmp_double);
    json_t *w = json_pack(
        "{s:I, s:o, s:{s:f, s:f}, s:f, s:f, s:f}", "jobs", (json_int_t)nwaited, "abs_error_s",
        abs_stats(waited, nwaited), "rel_error", "p50", nwaited ? rel[rank_of(nwaited, 50)] : 0.0,
        "p90", nwaited ? rel[rank_of(nwaited, 90)] : 0.0, "wait_s_p50",
        nwaited ? (double)waits[rank_of(nwaited, 50)] / 1000.0 : 0.0, "signed_error_s_p50",
        nwaited ? (double)signed_err[rank_of(nwaited, 50)] / 1000.0 : 0.0, "late_fraction",
        nwaited ? (double)late / (double)nwaited : 0.0);
    json_t *out = json_pack(
        "{s:s, s:I, s:I, s:{s:I, s:o}, s:o, s:o}", "definition",
        "each job's ETA at arrival (after that time's pass) against its real first start; "
        "abs_error_s: |ETA - start|; rel_error: that over the job's wait (jobs that waited); "
        "signed: ETA - start (positive: the ETA was late)",
        "jobs", (json_int_t)nall, "unknown", (json_int_t)unknown, "all", "jobs", (json_int_t)nall,
        "abs_error_s", abs_stats(all, nall), "waited", w, "by_basis", basis);
    free(all), free(waited), free(waits), free(signed_err), free(rel);
    return out;
}
