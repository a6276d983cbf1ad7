/* Fuzz target: the philly trace reader (sim/trace_philly.c). */
#include "fuzz_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_trace_read(&trace_reader_philly, data, size);
}
