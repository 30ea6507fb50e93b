#pragma once
// Reads a token shard in windows by positioned reads, so a rank training on a corpus of any size
// holds only the windows of its batch (the page cache, not the process, keeps what is hot).
// Opening checks the header; verify() hashes the body and bound-checks every id in one streaming
// pass of bounded memory, so a damaged or foreign shard is refused before training starts.
#include <cstdint>
#include <string>

#include "io/file_reader.h"
#include "io/tokens/token_shard.h"
#include "io/tokens/token_shard_format.h"

namespace ff {

class TokenShardReader {
 public:
  explicit TokenShardReader(const std::string& path);

  const TokenShardInfo& info() const { return info_; }
  const std::string& path() const { return file_.path(); }
  uint64_t tokens() const { return info_.tokens; }
  bool has_loss_mask() const { return info_.loss_mask; }

  // The checksum, then every id against the header's vocabulary; throws naming the file.
  void verify() const;
  // Refuses a shard made for another vocabulary or by another tokenizer than expect names.
  void check_matches(const TokenShardExpect& expect) const;

  // Tokens [begin, begin + count), widened to int32. Thread-safe (positioned reads).
  void read_tokens(uint64_t begin, size_t count, int32_t* out) const;
  // 1 where token begin + i is a loss target: the mask's bits, or all 1 without a mask.
  void read_loss_mask(uint64_t begin, size_t count, uint8_t* out) const;

 private:
  void check_range(uint64_t begin, size_t count) const;

  FileReader file_;
  unsigned char header_[shard_format::kHeaderBytes];
  TokenShardInfo info_;
};

}  // namespace ff
