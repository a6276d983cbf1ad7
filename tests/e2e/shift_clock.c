/*
 * Preloaded into a server by test_clock.py: CLOCK_REALTIME runs ahead by
 * the milliseconds written in the file TIDE_TEST_CLOCK_SHIFT names (read
 * again at most every 50 ms), as a wall clock stepped by NTP or an
 * operator would; the monotonic clock is left alone.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int64_t shift_ms(int (*real)(clockid_t, struct timespec *))
{
    static int64_t shift, read_at;
    struct timespec mono;
    real(CLOCK_MONOTONIC, &mono);
    int64_t now = (int64_t)mono.tv_sec * 1000 + mono.tv_nsec / 1000000;
    if (read_at && now - read_at < 50)
        return shift;
    read_at = now;
    const char *path = getenv("TIDE_TEST_CLOCK_SHIFT");
    FILE *f = path ? fopen(path, "r") : NULL;
    long long v = 0;
    if (f) {
        if (fscanf(f, "%lld", &v) != 1)
            v = 0;
        fclose(f);
    }
    return shift = v;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        int64_t ns = (int64_t)ts->tv_nsec + shift_ms(real) * 1000000;
        ts->tv_sec += ns / 1000000000;
        ts->tv_nsec = ns % 1000000000;
        if (ts->tv_nsec < 0) {
            ts->tv_nsec += 1000000000;
            ts->tv_sec--;
        }
    }
    return rc;
}
