#include "core/rng.h"

#include <cmath>

namespace ff {

void Philox::block(uint64_t key, uint64_t counter_hi, uint64_t counter_lo, uint32_t out[4]) {
  uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32);
  uint32_t c2 = uint32_t(counter_hi), c3 = uint32_t(counter_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(M0) * c0, p1 = uint64_t(M1) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n1 = uint32_t(p1);
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1, n3 = uint32_t(p0);
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += W0; k1 += W1;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

uint64_t stable_hash(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) { h ^= ch; h *= 1099511628211ull; }
  return h;
}

static float to_unit(uint32_t u) { return (float(u >> 8) + 1.0f) * (1.0f / 16777216.0f); }

float uniform01(uint64_t key, uint64_t stream, uint64_t index) {
  uint32_t r[4];
  Philox::block(key, stream, index, r);
  return to_unit(r[0]);
}

float normal01(uint64_t key, uint64_t stream, uint64_t index) {
  uint32_t r[4];
  Philox::block(key, stream, index, r);
  double u1 = (double(r[0]) + 1.0) / 4294967296.0, u2 = double(r[1]) / 4294967296.0;
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

uint32_t RngState::next_u32() {
  uint32_t r[4];
  Philox::block(seed, 0x5eed, counter++, r);
  return r[0];
}

float RngState::next_uniform01() { return to_unit(next_u32()); }

uint64_t RngState::next_below(uint64_t n) {
  // 64-bit draw and modulo: the bias is below 2^-32 for the sizes we shuffle.
  uint64_t hi = next_u32(), lo = next_u32();
  return ((hi << 32) | lo) % n;
}

}  // namespace ff
