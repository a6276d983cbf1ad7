/*
 * The body of every trace reader's fuzz target (fuzz_trace_*.c): the input
 * is a trace file, read from memory with the reader, then sorted and
 * shifted like trace_load does.
 */
#ifndef TIDE_FUZZ_TRACE_H
#define TIDE_FUZZ_TRACE_H

#include <stdio.h>

#include "fuzz.h"
#include "sim/trace.h"

static int fuzz_trace_read(const struct trace_reader_ops *ops, const uint8_t *data, size_t size)
{
    /* fmemopen refuses a zero size: an empty file is /dev/null */
    FILE *f = size ? fmemopen((void *)data, size, "rb") : fopen("/dev/null", "rb");
    if (!f)
        return 0;
    struct trace t;
    trace_init(&t);
    t.path = "fuzz.csv";
    struct tide_err err;
    tide_err_clear(&err);
    int rc = ops->read(f, &t, &err);
    fclose(f);
    if (rc != 0 && !err.message[0])
        abort(); /* every refusal says why */
    if (rc == 0)
        trace_normalise(&t);
    trace_release(&t);
    return 0;
}

#endif
