/* stderr logging with a UTC timestamp and the role's name. */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static const char *log_prefix = "tide";
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void log_set_prefix(const char *role)
{
    log_prefix = role;
}

static void log_line(const char *level, const char *fmt, va_list ap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "%s.%03ldZ %s %s: ", stamp, ts.tv_nsec / 1000000, log_prefix, level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&log_lock);
}

#define LOG_FN(name, level)                                                                        \
    void name(const char *fmt, ...)                                                                \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, fmt);                                                                         \
        log_line(level, fmt, ap);                                                                  \
        va_end(ap);                                                                                \
    }
LOG_FN(log_info, "info")
LOG_FN(log_warn, "warn")
LOG_FN(log_error, "error")
