#pragma once
// Inputs of the closed-form collective tests: each a function of (rank, element index), so a
// result in the wrong place, from the wrong rank or reduced twice shows up as a wrong value.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"

namespace ff::test {

inline Comm& world() { return comm_world(); }

// Small integers, exact in every element type including u8 sums of up to 4 ranks.
template <typename T>
T input(int rank, size_t i) {
  return T(rank + int(i % 13));
}

// sum over ranks q < p of input(q, i) = p(p-1)/2 + p (i mod 13)
template <typename T>
T expected_sum(int p, size_t i) {
  return T(p * (p - 1) / 2 + p * int(i % 13));
}

// For max/min the winning rank changes with i: value(q, i) = ((q + i) mod p) + p (i mod 5).
template <typename T>
T rotating(int rank, int p, size_t i) {
  return T(int((size_t(rank) + i) % size_t(p)) + p * int(i % 5));
}

// Sizes that divide by 2, 3 and 4 (12), do not (13, 1), leave ranks with nothing (1 on 4
// ranks), and span many segments of the pipelined algorithms (> kSlots x 256 KiB per chunk).
inline std::vector<size_t> sizes() { return {1, 12, 13, 1000, 2000003}; }

}  // namespace ff::test
