/*
 * The simulator's random numbers: splitmix64, so a seed names the same
 * sequence on every machine. Used by the synthetic traces and by the
 * driver's simulated spot interruptions and provider failures.
 */
#ifndef TIDE_SIM_RAND_H
#define TIDE_SIM_RAND_H

#include <stdint.h>

static inline uint64_t sim_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]. */
static inline double sim_unit(uint64_t *state)
{
    return ((double)(sim_splitmix64(state) >> 11) + 1.0) / 9007199254740992.0;
}

#endif
