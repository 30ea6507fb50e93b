#include "io/tokens/window_permutation.h"

namespace ff {

namespace {

constexpr int kRounds = 4;

// A 64-bit finaliser (MurmurHash3's fmix64): every input bit reaches every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  return x ^ (x >> 33);
}

uint64_t feistel(uint64_t x, int half_bits, const uint64_t (&round_keys)[kRounds]) {
  const uint64_t mask = (uint64_t(1) << half_bits) - 1;
  uint64_t left = x >> half_bits, right = x & mask;
  for (int r = 0; r < kRounds; ++r) {
    const uint64_t next = left ^ (mix(right ^ round_keys[r]) & mask);
    left = right;
    right = next;
  }
  return left << half_bits | right;
}

}  // namespace

uint64_t permute_index(uint64_t i, uint64_t n, uint64_t key, uint64_t stream) {
  int half_bits = 1;
  while (half_bits < 32 && (uint64_t(1) << (2 * half_bits)) < n) ++half_bits;
  // Cycle-walking: the walk from i meets a value below n before it could return to i, and two
  // indices below n never reach the same value, so the map stays a bijection of [0, n).
  uint64_t round_keys[kRounds];
  for (int r = 0; r < kRounds; ++r) round_keys[r] = mix(key ^ mix((stream << 2 | uint64_t(r)) + 0x9E3779B97F4A7C15ull));
  uint64_t x = i;
  do x = feistel(x, half_bits, round_keys);
  while (x >= n);
  return x;
}

}  // namespace ff
