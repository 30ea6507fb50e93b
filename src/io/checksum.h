#pragma once
// One checksum for every file the io layer writes (token shards, checkpoints). It only has to
// catch disk and transfer damage, not resist attackers, so it is built for speed: four
// independent 64-bit lanes keep the multiplier busy and a 50 MB payload hashes in milliseconds.
#include <cstddef>
#include <cstdint>

namespace ff {

// Any change confined to one 8-byte word always changes the result (every step is a bijection
// of the word), and the byte count is folded in, so truncation or appended zeros show up too.
// Stable across runs and machines of the same (little) endianness.
uint64_t checksum64(const void* data, size_t bytes);

}  // namespace ff
