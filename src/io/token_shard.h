#pragma once
// Token shards: the tokenized corpus on disk, read whole into memory by the data loader.
//
// Layout (little-endian), 48-byte header then payload:
//   0  char[8] magic "FFTOKENS"
//   8  u32     version (2)
//  12  u32     dtype: bytes per token, 2 (u16, used when vocab <= 65535) or 4 (u32)
//  16  u64     token count
//  24  u64     checksum64 of (the 16 bytes at 32..48, then checksum64 of the payload)
//  32  u32     vocab size the ids were produced with (lets readers bound-check every id)
//  36  u32     reserved, 0
//  40  u64     checksum64 of the tokenizer.model that encoded the ids (0 = not recorded)
//  48  payload: count tokens of dtype
// Version 1 (40-byte header) left the vocab field outside the checksum, so a damaged vocab could
// widen the id check; it is refused with the advice to re-run prepare.
#include <cstdint>
#include <string>
#include <vector>

namespace ff {

struct TokenShardInfo {
  uint32_t version = 0;
  uint32_t dtype_bytes = 0;
  uint64_t tokens = 0;
  uint64_t checksum = 0;
  uint32_t vocab_size = 0;
  uint64_t tokenizer_checksum = 0;
};

// What the consumer of a shard holds: its model's vocabulary and the tokenizer it will decode
// with. A shard made for another vocabulary would index past the logits (or silently score the
// wrong text), so it is refused rather than read.
struct TokenShardExpect {
  int vocab_size = 0;               // the model's; the shard's vocab field must equal it
  uint64_t tokenizer_checksum = 0;  // 0 skips the comparison (either side unrecorded)
  std::string vocab_source;         // names where vocab_size came from, for the message
};

// Atomic (path.tmp, fsync, rename). Every id must lie in [0, vocab_size).
void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens, int vocab_size,
                       uint64_t tokenizer_checksum = 0);
// Validates magic, version, dtype, size, checksum and id range; throws naming the problem.
std::vector<int32_t> read_token_shard(const std::string& path);
// The same, and refuses a shard whose vocabulary or tokenizer differs from what the reader has.
std::vector<int32_t> read_token_shard(const std::string& path, const TokenShardExpect& expect);
// Header only (magic, version, dtype and file size are checked; the payload is not hashed).
TokenShardInfo read_token_shard_info(const std::string& path);

}  // namespace ff
