#pragma once
// The token shard format's constants and checksums, shared by its writer and reader
// (token_shard.h describes the layout).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ff::shard_format {

constexpr char kMagic[8] = {'F', 'F', 'T', 'O', 'K', 'E', 'N', 'S'};
constexpr uint32_t kVersion = 3;
constexpr size_t kHeaderBytes = 48;
constexpr uint32_t kFlagLossMask = 1;
// The header fields the checksum covers besides the body: vocab, flags, tokenizer sum.
constexpr size_t kCoveredAt = 32, kCoveredBytes = 16;
// Big enough that the per-block sums are a rounding error of the body (8 bytes a MiB), small
// enough that a streaming reader's buffer stays small.
constexpr size_t kChecksumBlockBytes = size_t(1) << 20;
constexpr const char* kFix = "re-run fivefold prepare to rebuild the token shards";
constexpr const char* kMissingFix = "run fivefold prepare first, it writes the token shards";

inline uint64_t mask_bytes(uint64_t tokens) { return (tokens + 7) / 8; }

// The body's block sum, fed in pieces of any size: the blocks are cut at fixed offsets of the
// body, not where the pieces end, so writer and reader agree whatever their buffer sizes.
class BlockChecksum {
 public:
  void add(const void* data, size_t bytes);
  uint64_t finish();  // the checksum64 of the blocks' checksums; call once

 private:
  std::vector<unsigned char> block_;
  std::vector<uint64_t> sums_;
};

// The header checksum over its covered fields and a body sum (version 3's block sum, version
// 2's checksum64 of the whole payload).
uint64_t header_checksum(const unsigned char* header, uint64_t body_sum);

}  // namespace ff::shard_format
