#include "io/corpus/shard_series.h"

#include <cstdio>
#include <stdexcept>


namespace ff {

std::string shard_file_name(const std::string& prefix, size_t index) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%05zu", index);
  return prefix + "-" + digits + ".bin";
}

ShardSeries::ShardSeries(std::string dir, std::string prefix, int vocab_size,
                         uint64_t tokenizer_checksum, uint64_t shard_tokens, bool with_loss_mask)
    : dir_(std::move(dir)),
      prefix_(std::move(prefix)),
      vocab_size_(vocab_size),
      tokenizer_checksum_(tokenizer_checksum),
      shard_tokens_(shard_tokens),
      with_loss_mask_(with_loss_mask) {}

void ShardSeries::open_next() {
  if (current_) {
    current_->commit();
    names_.push_back(shard_file_name(prefix_, names_.size()));
  }
  current_ = std::make_unique<TokenShardWriter>(dir_ + "/" + shard_file_name(prefix_, names_.size()),
                                                vocab_size_, tokenizer_checksum_, with_loss_mask_);
}

void ShardSeries::append(const EncodedDocument& doc) {
  if (doc.loss_mask.empty() == with_loss_mask_) {
    throw std::logic_error("ShardSeries::append: a document's loss mask does not match the series");
  }
  if (!current_ || (current_->tokens() > 0 && current_->tokens() + doc.ids.size() > shard_tokens_)) open_next();
  current_->append(doc.ids.data(), doc.ids.size(), with_loss_mask_ ? doc.loss_mask.data() : nullptr);
  tokens_ += doc.ids.size();
  ++documents_;
}

void ShardSeries::finish() {
  if (!current_) open_next();
  current_->commit();
  names_.push_back(shard_file_name(prefix_, names_.size()));
  current_.reset();
}

}  // namespace ff
