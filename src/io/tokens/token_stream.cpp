#include "io/tokens/token_stream.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "io/tokens/token_shard_reader.h"

namespace ff {

namespace {

class InMemoryTokens final : public TokenStream {
 public:
  InMemoryTokens(std::vector<int32_t> tokens, std::vector<uint8_t> mask) : tokens_(std::move(tokens)), mask_(std::move(mask)) {
    if (!mask_.empty() && mask_.size() != tokens_.size())
      throw std::logic_error("tokens_in_memory: " + std::to_string(mask_.size()) + " loss-mask entries for " +
                             std::to_string(tokens_.size()) + " tokens");
  }
  uint64_t size() const override { return tokens_.size(); }
  bool has_loss_mask() const override { return !mask_.empty(); }
  void read(uint64_t begin, size_t count, int32_t* tokens, uint8_t* loss_mask) const override {
    if (begin > tokens_.size() || count > tokens_.size() - begin)
      throw std::runtime_error("token stream: tokens [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                              ") lie past its " + std::to_string(tokens_.size()) + " tokens");
    if (tokens) std::memcpy(tokens, tokens_.data() + begin, count * sizeof(int32_t));
    if (!loss_mask) return;
    if (mask_.empty()) std::fill(loss_mask, loss_mask + count, uint8_t(1));
    else std::memcpy(loss_mask, mask_.data() + begin, count);
  }

 private:
  std::vector<int32_t> tokens_;
  std::vector<uint8_t> mask_;
};

class ShardTokens final : public TokenStream {
 public:
  explicit ShardTokens(std::vector<std::unique_ptr<TokenShardReader>> shards) : shards_(std::move(shards)) {
    for (const auto& s : shards_) {
      starts_.push_back(size_);
      size_ += s->tokens();
    }
  }
  uint64_t size() const override { return size_; }
  bool has_loss_mask() const override { return !shards_.empty() && shards_.front()->has_loss_mask(); }
  void read(uint64_t begin, size_t count, int32_t* tokens, uint8_t* loss_mask) const override {
    if (begin > size_ || count > size_ - begin)
      throw std::runtime_error("token shards: tokens [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                              ") lie past their " + std::to_string(size_) + " tokens");
    // The last shard starting at or before begin; a window may run on into the next shards.
    size_t s = size_t(std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin()) - 1;
    for (size_t done = 0; done < count; ++s) {
      const uint64_t at = begin + done - starts_[s];
      const size_t n = size_t(std::min<uint64_t>(count - done, shards_[s]->tokens() - at));
      if (tokens) shards_[s]->read_tokens(at, n, tokens + done);
      if (loss_mask) shards_[s]->read_loss_mask(at, n, loss_mask + done);
      done += n;
    }
  }

 private:
  std::vector<std::unique_ptr<TokenShardReader>> shards_;
  std::vector<uint64_t> starts_;
  uint64_t size_ = 0;
};

}  // namespace

std::shared_ptr<const TokenStream> tokens_in_memory(std::vector<int32_t> tokens, std::vector<uint8_t> loss_mask) {
  return std::make_shared<InMemoryTokens>(std::move(tokens), std::move(loss_mask));
}

std::shared_ptr<const TokenStream> open_token_shards(const std::vector<std::string>& paths,
                                                     const TokenShardExpect& expect) {
  if (paths.empty()) throw std::logic_error("open_token_shards: no shard named");
  std::vector<std::unique_ptr<TokenShardReader>> shards;
  for (const auto& p : paths) {
    auto& shard = *shards.emplace_back(std::make_unique<TokenShardReader>(p));
    shard.verify();
    // Compared only after the checksum held, so the message describes the file, not damage.
    shard.check_matches(expect);
    const bool first_has = shards.front()->has_loss_mask();
    if (shard.has_loss_mask() != first_has)
      throw std::runtime_error("token shard " + p + (shard.has_loss_mask() ? " has a" : " has no") +
                               " loss mask but " + paths.front() + (first_has ? " has one" : " has none") +
                               "; the shards of one split must come from one prepare");
  }
  return std::make_shared<ShardTokens>(std::move(shards));
}

}  // namespace ff
