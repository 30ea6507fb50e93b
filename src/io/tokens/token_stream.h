#pragma once
// The token sequence a data loader cuts windows from, whatever holds it: a vector in memory
// (tests, tools) or token shards on disk read in windows (training), one shard after another as
// one stream. Each token may carry a loss-mask bit (fine-tuning data: only completion tokens are
// targets); a stream without a mask makes every token a target.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/tokens/token_shard.h"

namespace ff {

class TokenStream {
 public:
  virtual ~TokenStream() = default;
  virtual uint64_t size() const = 0;
  virtual bool has_loss_mask() const = 0;
  // Tokens [begin, begin + count) into tokens; loss_mask (may be null) gets 1 where the token is
  // a loss target. Thread-safe.
  virtual void read(uint64_t begin, size_t count, int32_t* tokens, uint8_t* loss_mask) const = 0;
};

// loss_mask: empty, or one 0/1 entry per token.
std::shared_ptr<const TokenStream> tokens_in_memory(std::vector<int32_t> tokens, std::vector<uint8_t> loss_mask = {});

// The shards in order as one stream, each verified (checksum, id range) and matched against
// expect before anything is read from it; every shard must agree on having a loss mask.
std::shared_ptr<const TokenStream> open_token_shards(const std::vector<std::string>& paths,
                                                     const TokenShardExpect& expect);

}  // namespace ff
