/*
 * Fake GPUs for machines without one (`--fake-gpus 4xH200:141GB`). Exposed
 * beyond gpu_fake_ops so the spec and telemetry parsers can be unit-tested.
 */
#ifndef TIDE_AGENT_GPU_FAKE_H
#define TIDE_AGENT_GPU_FAKE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/gpu.h"

/* Parses a spec: a comma list of COUNTxMODEL:MEMORY where COUNT is 1..512
 * (512 GPUs in all), MODEL is letters, digits, '.', '_' or '-', and MEMORY
 * is a positive integer with a unit GB/GiB (x1024 MiB) or MB/MiB. Devices
 * are numbered from 0 in order and get the UUID GPU-fake-<node>-<index>.
 * Returns 0 and a new array in *out (caller frees) or TIDE_EINVAL with err
 * saying which entry is wrong and why. */
int gpu_fake_parse_spec(const char *spec, const char *node_name, struct gpu_device **out,
                        size_t *count, struct tide_err *err);

/* Parses what a task wrote to its TIDE_FAKE_GPU_FILE: whitespace-separated
 * `util=<pct>` and `mem=<MiB>`, either optional. Missing values are 0;
 * util is clamped to 0..100. Returns 0 or TIDE_EINVAL for anything else. */
int gpu_fake_parse_telemetry(const char *text, int *util_pct, int64_t *mem_mib);

/* Parses an injected-fault file (gpu_fake_fault.c): one fault a line,
 * "INDEX xid N", "INDEX ecc N", "INDEX temp C" or "INDEX lost"; blank lines
 * and lines starting with '#' are skipped. out[i] (one per device) gets the
 * number of faults on devices[i] as seq and its last one as what. Returns 0,
 * or TIDE_EINVAL with *bad_line the first line that is not a fault of a
 * known GPU (the others still count). */
int gpu_fake_parse_faults(const char *text, const struct gpu_device *devices, size_t count,
                          struct gpu_health *out, int *bad_line);

/* Has be (the fake backend) read faults from the file at path, counting
 * only the lines added from now on: those already there were injected into
 * an earlier run of the agent, which reported them (NVML's counts, too,
 * start at 0 with each run). A file replaced by another, or cut shorter,
 * counts from its first line. */
void gpu_fake_watch_faults(struct gpu_backend *be, const char *path);

#endif
