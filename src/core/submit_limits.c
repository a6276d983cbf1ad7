/* The size limits of one submit request (see submit_limits.h). */
#include "core/submit_limits.h"

#include "core/job_spec.h"

#include "core/core_banned.h"

#define MIB (1024LL * 1024)

void submit_size_add(struct submit_size *size, json_t *given)
{
    json_t *array = json_object_get(given, "array");
    long long count = json_is_integer(array) ? json_integer_value(array) : 1;
    if (count < 1 || count > JOB_SPEC_MAX_ARRAY)
        count = 1; /* refused by the spec's own check: it creates nothing */
    size->jobs += count;
    size->spec_bytes += (long long)json_dumpb(given, NULL, 0, JSON_COMPACT) * count;
}

int submit_size_check(const struct submit_size *size, const char *field, struct tide_err *err)
{
    if (size->jobs > SUBMIT_MAX_JOBS)
        return tide_err_set(err, TIDE_EINVAL, field,
                            "%s: this request would create %lld jobs (array members counted); "
                            "one request may create at most %d: send fewer specs or smaller "
                            "arrays in each",
                            field, size->jobs, SUBMIT_MAX_JOBS);
    if (size->spec_bytes > SUBMIT_MAX_SPEC_BYTES)
        return tide_err_set(err, TIDE_EINVAL, field,
                            "%s: this request's specs, each times its array, come to %lld MiB; "
                            "one request may create at most %lld MiB of job specs: use smaller "
                            "arrays or shorter specs, or split the request",
                            field, (size->spec_bytes + MIB - 1) / MIB, SUBMIT_MAX_SPEC_BYTES / MIB);
    return 0;
}
