#pragma once
// Writes one token shard in a single pass: tokens go to disk as they are appended (a corpus
// larger than memory streams through), only the loss mask's bits (1/16 of a u16 shard) wait in
// memory for the end, where the header, which needs the final count and checksum, is written
// over its placeholder. Nothing appears at the path until commit(): an interrupted writer leaves
// no shard that looks complete.
#include <cstdint>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/tokens/token_shard_format.h"

namespace ff {

class TokenShardWriter {
 public:
  // with_loss_mask: every append passes a mask, and the shard records it.
  TokenShardWriter(const std::string& path, int vocab_size, uint64_t tokenizer_checksum, bool with_loss_mask);

  // n ids, each in [0, vocab_size); loss_mask (n bytes, 0 or 1) exactly when the shard has one.
  void append(const int32_t* ids, size_t n, const uint8_t* loss_mask = nullptr);
  uint64_t tokens() const { return tokens_; }
  const std::string& path() const { return path_; }
  // Writes the mask and the header, then moves the file into place. An uncommitted writer's
  // temporary file is removed when it is destroyed.
  void commit();

 private:
  void write_body(const void* data, size_t bytes);

  std::string path_;
  int vocab_size_;
  uint64_t tokenizer_checksum_;
  bool with_loss_mask_;
  uint32_t dtype_bytes_;
  AtomicFileWriter file_;
  shard_format::BlockChecksum sum_;
  std::vector<uint8_t> mask_bits_;
  std::vector<unsigned char> staging_;  // one append's ids narrowed to the shard's dtype
  uint64_t tokens_ = 0;
};

}  // namespace ff
