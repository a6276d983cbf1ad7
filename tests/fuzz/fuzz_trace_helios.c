/* Fuzz target: the helios trace reader (sim/trace_helios.c). */
#include "fuzz_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_trace_read(&trace_reader_helios, data, size);
}
