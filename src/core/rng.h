/* A small, fast, explicitly seeded generator (xoshiro256**, seeded by splitmix64), so that the same
 * seed gives the same numbers on every machine and every backend. */
#ifndef PC_RNG_H
#define PC_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} pc__rng;

void pc__rng_seed(pc__rng *rng, uint64_t seed);
uint64_t pc__rng_next(pc__rng *rng);
double pc__rng_uniform(pc__rng *rng);             /* [0, 1) with 53 random bits */
uint64_t pc__rng_below(pc__rng *rng, uint64_t n); /* uniform in [0, n), n >= 1, no modulo bias */
double pc__rng_normal(pc__rng *rng);              /* standard normal (Box-Muller, no cached state) */

#endif
