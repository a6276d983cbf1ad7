/*
 * Why a pending job waits, kept as a compact cause and worded only when
 * read. A scheduling pass over a deep queue says why for every job it
 * passes over; formatting that sentence each time was most of the pass's
 * cost, so the pass records a kind and the few numbers the sentence needs,
 * and readers (the API, the simulator's report) ask wait_reason_format for
 * the text. Rare or one-off reasons are still written out in full into the
 * job's wait_reason buffer (kind WAIT_TEXT, the zero value).
 */
#ifndef TIDE_WAIT_REASON_H
#define TIDE_WAIT_REASON_H

#include <stddef.h>
#include <stdint.h>

struct job;

enum wait_kind {
    WAIT_TEXT = 0,   /* the text is the job's wait_reason buffer ("" : none) */
    WAIT_BEHIND,     /* strict order: behind job `id`, policy `policy` */
    WAIT_RETRY,      /* retry backoff: next attempt in `id` seconds */
    WAIT_QUEUE_JOBS, /* its queue is at its cap of `n1` running jobs */
    WAIT_QUEUE_GPUS, /* its queue would pass its cap of `n1` GPUs (`n2` in use) */
    WAIT_ONE_NODE,   /* waiting for its GPUs (and host share) free on one node */
    /* Placement's own (placement_explain): */
    WAIT_NO_NODE,    /* no ready node could ever hold it (GPUs, model, memory, host share) */
    WAIT_OVER_LOAD,  /* free GPUs over the load thresholds: memory `n1` %, utilisation `n2` % */
    WAIT_HOST_SHARE, /* its GPUs are free on a node, its CPUs or memory are not */
    WAIT_GPUS_FREE,  /* waiting for its GPUs free on one node; `n1` the most free now */
    WAIT_DELETED_NODE, /* its last attempt may still run on a deleted node: next in `id` seconds */
};

struct wait_cause {
    uint8_t kind; /* enum wait_kind */
    int32_t n1, n2;
    int64_t id;
    const char *policy; /* WAIT_BEHIND: the order policy's name (static) */
};

/* Where a writer puts why a job waits: a cause, and the buffer
 * (TIDE_REASON_MAX bytes) for the words of a WAIT_TEXT cause. Placement
 * strategies take one (NULL: no reason wanted); wait_why_of points one at
 * a job's own. */
struct wait_why {
    struct wait_cause *cause;
    char *text;
};

struct wait_why wait_why_of(struct job *job);

/* Records the cause (the text is worded when read). */
void wait_why_set(const struct wait_why *why, enum wait_kind kind, int32_t n1, int32_t n2,
                  int64_t id, const char *policy);

/* Marks the cause as WAIT_TEXT and returns the buffer for its words. */
char *wait_why_text(const struct wait_why *why);

/* Writes the sentence for cause (with text for WAIT_TEXT) about job into
 * out (size bytes, NUL-terminated); returns out. */
char *wait_cause_format(const struct wait_cause *cause, const char *text, const struct job *job,
                        char *out, size_t size);

/* Writes why job waits into out (size bytes, NUL-terminated): the same
 * sentence the scheduling pass used to write out in full. Empty when no
 * reason was given. Returns out. */
char *wait_reason_format(const struct job *job, char *out, size_t size);

/* Marks job's reason as the text in its wait_reason buffer and returns the
 * buffer, for a writer that words the reason itself. */
char *wait_reason_text(struct job *job);

/* Records cause as why job waits (the text is worded when read). */
void wait_reason_set(struct job *job, enum wait_kind kind, int32_t n1, int32_t n2, int64_t id,
                     const char *policy);

#endif
