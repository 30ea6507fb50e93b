#pragma once
// Token shards: the tokenized corpus on disk, read whole into memory by the data loader.
//
// Layout (little-endian), 40-byte header then payload:
//   0  char[8] magic "FFTOKENS"
//   8  u32     version (1)
//  12  u32     dtype: bytes per token, 2 (u16, used when vocab <= 65535) or 4 (u32)
//  16  u64     token count
//  24  u64     checksum64 of the payload bytes
//  32  u32     vocab size the ids were produced with (lets readers bound-check every id)
//  36  u32     reserved, 0
//  40  payload: count tokens of dtype
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
};

// Atomic (path.tmp, fsync, rename). Every id must lie in [0, vocab_size).
void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens, int vocab_size);
// Validates magic, version, dtype, size, checksum and id range; throws naming the problem.
std::vector<int32_t> read_token_shard(const std::string& path);
// Header only (magic, version, dtype and file size are checked; the payload is not hashed).
TokenShardInfo read_token_shard_info(const std::string& path);

}  // namespace ff
