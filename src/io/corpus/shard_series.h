#pragma once
// One split of a prepared corpus (train or val) as a series of token shards, PREFIX-00000.bin,
// PREFIX-00001.bin, ..., a new one begun when the next document would take the current past
// shard_tokens. Documents are never cut across shards (one larger than shard_tokens gets a shard
// of its own), so every shard starts at a document's first token. Tokens stream to disk as they
// come (TokenShardWriter), and each shard appears only when complete.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/tokens/token_shard_writer.h"

namespace ff {

struct EncodedDocument {
  std::vector<int32_t> ids;
  std::vector<uint8_t> loss_mask;  // empty, or one 0/1 per id (1: a loss target)
};

class ShardSeries {
 public:
  // with_loss_mask: every document carries a loss mask (fine-tuning data), and the shards too.
  ShardSeries(std::string dir, std::string prefix, int vocab_size, uint64_t tokenizer_checksum,
              uint64_t shard_tokens, bool with_loss_mask);
  void append(const EncodedDocument& doc);
  // Writes the last shard; a split with no document still gets one empty shard, so a loader
  // always finds one.
  void finish();
  // File names (not paths) of the shards written, in order.
  const std::vector<std::string>& shard_names() const { return names_; }
  uint64_t tokens() const { return tokens_; }
  uint64_t documents() const { return documents_; }

 private:
  void open_next();

  std::string dir_, prefix_;
  int vocab_size_;
  uint64_t tokenizer_checksum_;
  uint64_t shard_tokens_;
  bool with_loss_mask_;
  std::unique_ptr<TokenShardWriter> current_;
  std::vector<std::string> names_;
  uint64_t tokens_ = 0, documents_ = 0;
};

// "train-00003.bin"
std::string shard_file_name(const std::string& prefix, size_t index);

}  // namespace ff
