#include "io/tokens/token_shard.h"

#include <stdexcept>

#include "io/tokens/token_shard_reader.h"
#include "io/tokens/token_shard_writer.h"

namespace ff {

void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens, int vocab_size,
                       uint64_t tokenizer_checksum, const std::vector<uint8_t>* loss_mask) {
  if (loss_mask && loss_mask->size() != tokens.size())
    throw std::logic_error("write_token_shard(" + path + "): the loss mask has " +
                           std::to_string(loss_mask->size()) + " entries for " + std::to_string(tokens.size()) + " tokens");
  TokenShardWriter w(path, vocab_size, tokenizer_checksum, loss_mask != nullptr);
  w.append(tokens.data(), tokens.size(), loss_mask ? loss_mask->data() : nullptr);
  w.commit();
}

std::vector<int32_t> read_token_shard(const std::string& path) {
  return read_token_shard(path, TokenShardExpect{});
}

std::vector<int32_t> read_token_shard(const std::string& path, const TokenShardExpect& expect) {
  const TokenShardReader r(path);
  r.verify();
  // Compared only after the checksum held, so the message describes the file, not damage.
  r.check_matches(expect);
  std::vector<int32_t> out(r.tokens());
  r.read_tokens(0, out.size(), out.data());
  return out;
}

TokenShardInfo read_token_shard_info(const std::string& path) { return TokenShardReader(path).info(); }

}  // namespace ff
