/*
 * Reading a task's log in heartbeat-sized chunks that are valid UTF-8, so
 * they can travel as JSON strings without changing their length in bytes
 * (the server places each chunk by its byte offset).
 */
#ifndef TIDE_AGENT_TASK_LOG_H
#define TIDE_AGENT_TASK_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest chunk of one task's log in one heartbeat (docs/api.md). */
#define TASK_LOG_CHUNK_MAX (64 * 1024)

/* Reads up to max bytes of the file at path from offset into a new buffer
 * (*data, caller frees; NULL with *len 0 when there is nothing to send).
 * Bytes that are not UTF-8, and NUL, become '?' one for one. A character cut
 * by the end of the chunk is left for the next one unless final says the
 * file will not grow. *more is set when the file holds data past the chunk.
 * A missing file is no data. Returns 0 or -errno. */
int agent_task_log_chunk(const char *path, int64_t offset, size_t max, bool final, char **data,
                         size_t *len, bool *more);

/* Makes buf[0..len) valid UTF-8 in place as described above and returns how
 * many leading bytes to send: len, or less when the last character is cut
 * and final is false. Exposed for tests. */
size_t agent_task_log_sanitize(char *buf, size_t len, bool final);

/* How many leading bytes of the sanitized data[0..len) fit in budget bytes
 * once written as a JSON string (quotes and escapes counted: a control byte
 * takes up to six), cut between characters. What a heartbeat carries is
 * bounded by its encoded size, so output full of control bytes cannot push
 * the body past the server's limit. *encoded is what those bytes take, quotes
 * included, never above budget. */
size_t agent_task_log_fit_json(const char *data, size_t len, size_t budget, size_t *encoded);

#endif
