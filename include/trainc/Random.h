/*===- Random.h - trainc's counter-based random numbers ---------*- C++ -*-===//
 *
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11) and the dropout mask built on it. Every random value trainc
 * draws is a pure function of (seed, stream, step, element index), so a
 * training step gives the same mask on every run, on every thread count,
 * and in every implementation: the reference interpreter, the generated
 * kernels and the C runtime all include this one header. It therefore
 * depends on nothing but <stdint.h> and compiles as C or C++.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TRAINC_RANDOM_H
#define TRAINC_RANDOM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The four output words of one Philox4x32-10 block. */
typedef struct trainc_philox4x32 {
  uint32_t v[4];
} trainc_philox4x32;

/* One Philox4x32-10 block: 10 rounds over `counter` under `key`, with the
 * key bumped by the Weyl constants between rounds (Random123's order). */
static inline trainc_philox4x32 trainc_philox4x32_10(const uint32_t counter[4],
                                                     const uint32_t key[2]) {
  const uint64_t multiplier0 = 0xD2511F53u, multiplier1 = 0xCD9E8D57u;
  const uint32_t weyl0 = 0x9E3779B9u, weyl1 = 0xBB67AE85u;
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  int round;
  for (round = 0; round < 10; ++round) {
    uint64_t product0, product1;
    if (round > 0) {
      k0 += weyl0;
      k1 += weyl1;
    }
    product0 = multiplier0 * c0;
    product1 = multiplier1 * c2;
    c0 = (uint32_t)(product1 >> 32) ^ c1 ^ k0;
    c1 = (uint32_t)product1;
    c2 = (uint32_t)(product0 >> 32) ^ c3 ^ k1;
    c3 = (uint32_t)product0;
  }
  trainc_philox4x32 result;
  result.v[0] = c0;
  result.v[1] = c1;
  result.v[2] = c2;
  result.v[3] = c3;
  return result;
}

/* The uniform number in [0, 1) that element `index` of the mask drawn for
 * (seed, stream, step) uses: key = seed, counter = (index, stream, step),
 * the top 24 bits of output word 0 scaled by 2^-24 (exact in float). */
static inline float trainc_random_uniform(uint64_t seed, uint64_t stream,
                                          uint64_t step, uint64_t index) {
  const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  const uint32_t counter[4] = {(uint32_t)index, (uint32_t)stream,
                               (uint32_t)step, (uint32_t)(step >> 32)};
  uint32_t word = trainc_philox4x32_10(counter, key).v[0];
  return (float)(word >> 8) * (1.0f / 16777216.0f);
}

/* Element `index` of a dropout mask (graph.random_mask): 1 / (1 - ratio)
 * when the element is kept, which happens iff its uniform is >= ratio,
 * else 0. Computed in double; callers round to their element type. */
static inline double trainc_random_mask_value(uint64_t seed, uint64_t stream,
                                              uint64_t step, uint64_t index,
                                              double ratio) {
  double uniform = trainc_random_uniform(seed, stream, step, index);
  return uniform >= ratio ? 1.0 / (1.0 - ratio) : 0.0;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRAINC_RANDOM_H */
