/* Fuzz target: the alibaba trace reader (sim/trace_alibaba.c). */
#include "fuzz_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_trace_read(&trace_reader_alibaba, data, size);
}
