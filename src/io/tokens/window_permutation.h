#pragma once
// A pseudo-random bijection of [0, n) computed one index at a time, with no table: the window
// order of an epoch too large to shuffle in memory (data_loader.h). A 4-round Feistel network
// over the smallest even number of bits covering n (a bijection whatever its round function,
// here a 64-bit hash of the half and a key drawn from (key, stream, round)), walked until the
// value lands below n: fewer than 4 steps on average, since the domain is under 4n.
#include <cstdint>

namespace ff {

// stream < 2^62 (the epoch, say); i < n.
uint64_t permute_index(uint64_t i, uint64_t n, uint64_t key, uint64_t stream);

}  // namespace ff
