/* stderr logging with a UTC timestamp and the role's name. */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *log_prefix = "tide";
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void log_set_prefix(const char *role)
{
    log_prefix = role;
}

/* Most lines fit here; a longer one is formatted on the heap. */
#define LOG_LINE_MAX 2048

/* The line is made first and written with one call: unbuffered stderr
 * would take a system call for each part (three a line), and an agent logs
 * two lines a job. */
static void log_line(const char *level, const char *fmt, va_list ap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    char line[LOG_LINE_MAX], *text = line;
    int head = snprintf(line, sizeof line, "%s.%03ldZ %s %s: ", stamp, ts.tv_nsec / 1000000,
                        log_prefix, level);
    if (head < 0 || (size_t)head >= sizeof line)
        return;
    va_list again;
    va_copy(again, ap);
    int body = vsnprintf(line + head, sizeof line - (size_t)head, fmt, ap);
    size_t len = (size_t)head + (body > 0 ? (size_t)body : 0);
    if (len + 1 >= sizeof line && (text = malloc(len + 2)) != NULL) {
        memcpy(text, line, (size_t)head);
        vsnprintf(text + head, len - (size_t)head + 1, fmt, again);
    } else if (len + 1 >= sizeof line) {
        text = line; /* out of memory: the line as it fits */
        len = sizeof line - 2;
    }
    va_end(again);
    text[len] = '\n';
    pthread_mutex_lock(&log_lock);
    fwrite(text, 1, len + 1, stderr);
    pthread_mutex_unlock(&log_lock);
    if (text != line)
        free(text);
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
