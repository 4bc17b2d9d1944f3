/* xoshiro256** (Blackman and Vigna's published algorithm) with splitmix64 seeding. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void pc__rng_seed(pc__rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&seed);
}

uint64_t pc__rng_next(pc__rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double pc__rng_uniform(pc__rng *rng) { return (double)(pc__rng_next(rng) >> 11) * 0x1.0p-53; }

uint64_t pc__rng_below(pc__rng *rng, uint64_t n)
{
    /* Rejection keeps every value equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = pc__rng_next(rng);
    while (x >= limit);
    return x % n;
}

double pc__rng_normal(pc__rng *rng)
{
    double u1 = 1.0 - pc__rng_uniform(rng); /* (0, 1]: log stays finite */
    double u2 = pc__rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
