#pragma once
// Token shards: the tokenized corpus on disk. A shard is written in one streaming pass
// (TokenShardWriter) and read in windows (TokenShardReader), so neither side ever holds a whole
// corpus in memory; read_token_shard reads a small shard whole (tests, tools).
//
// Layout (little-endian), 48-byte header, then the body:
//   0  char[8] magic "FFTOKENS"
//   8  u32     version (3; 2 is still read)
//  12  u32     dtype: bytes per token, 2 (u16, used when vocab <= 65535) or 4 (u32)
//  16  u64     token count
//  24  u64     checksum (below)
//  32  u32     vocab size the ids were produced with (lets readers bound-check every id)
//  36  u32     flags: bit 0 = a loss mask follows the tokens (version 2: reserved, 0)
//  40  u64     checksum64 of the tokenizer file that encoded the ids (0 = not recorded)
//  48  body:   count tokens of dtype, then, with a loss mask, ceil(count / 8) bytes of bits:
//              bit (i % 8) of byte (i / 8) is 1 when token i is a loss target
// Version 3's checksum is checksum64 of (the 16 header bytes at 32..48, then the block sum of the
// body), where the block sum is checksum64 of the checksum64s of the body's 1 MiB blocks: both
// sides compute it streaming. Version 2 hashed its payload in one call; such shards verify in
// memory. Version 1 (40-byte header, vocab field outside the checksum) is refused.
//
// The loss mask carries fine-tuning data's "train on the completion only": a masked-out token
// is never a target, so the loss of a step averages over the masked-in tokens alone.
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
  bool loss_mask = false;
};

// What the consumer of a shard holds: its model's vocabulary and the tokenizer it will decode
// with. A shard made for another vocabulary would index past the logits (or silently score the
// wrong text), so it is refused rather than read.
struct TokenShardExpect {
  int vocab_size = 0;               // the model's; the shard's vocab field must equal it
  uint64_t tokenizer_checksum = 0;  // 0 skips the comparison (either side unrecorded)
  std::string vocab_source;         // names where vocab_size came from, for the message
};

// Atomic (path.tmp, fsync, rename). Every id must lie in [0, vocab_size); loss_mask, when given,
// has one 0/1 byte per token.
void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens, int vocab_size,
                       uint64_t tokenizer_checksum = 0, const std::vector<uint8_t>* loss_mask = nullptr);
// Validates magic, version, dtype, size, checksum and id range; throws naming the problem.
std::vector<int32_t> read_token_shard(const std::string& path);
// The same, and refuses a shard whose vocabulary or tokenizer differs from what the reader has.
std::vector<int32_t> read_token_shard(const std::string& path, const TokenShardExpect& expect);
// Header only (magic, version, dtype and file size are checked; the body is not hashed).
TokenShardInfo read_token_shard_info(const std::string& path);

}  // namespace ff
