#include "io/shard_series.h"

#include <cstdio>
#include <stdexcept>

#include "io/token_shard.h"

namespace ff {

std::string shard_file_name(const std::string& prefix, size_t index) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%05zu", index);
  return prefix + "-" + digits + ".bin";
}

ShardSeries::ShardSeries(std::string dir, std::string prefix, int vocab_size,
                         uint64_t tokenizer_checksum, uint64_t shard_tokens)
    : dir_(std::move(dir)),
      prefix_(std::move(prefix)),
      vocab_size_(vocab_size),
      tokenizer_checksum_(tokenizer_checksum),
      shard_tokens_(shard_tokens) {}

void ShardSeries::append(const EncodedDocument& doc) {
  if (!doc.loss_mask.empty()) {
    throw std::runtime_error("prepare: this build's token shards carry no loss mask; "
                             "prompt/completion data needs token shards version 3");
  }
  if (!current_.empty() && current_.size() + doc.ids.size() > shard_tokens_) flush();
  current_.insert(current_.end(), doc.ids.begin(), doc.ids.end());
  tokens_ += doc.ids.size();
  ++documents_;
}

void ShardSeries::flush() {
  const std::string name = shard_file_name(prefix_, names_.size());
  write_token_shard(dir_ + "/" + name, current_, vocab_size_, tokenizer_checksum_);
  names_.push_back(name);
  current_.clear();
}

void ShardSeries::finish() {
  if (!current_.empty() || names_.empty()) flush();
}

}  // namespace ff
