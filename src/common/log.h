/*
 * Timestamped log lines on stderr for the long-running roles (server,
 * agent). Library code in src/core never logs; it returns errors.
 */
#ifndef TIDE_LOG_H
#define TIDE_LOG_H

void log_set_prefix(const char *role);
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
