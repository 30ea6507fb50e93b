#include "train/run_data.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "io/prepare.h"
#include "io/token_shard.h"
#include "io/tokenizer.h"

namespace ff {

namespace fs = std::filesystem;

namespace {

std::string data_file(const TrainConfig& c, const char* name) {
  fs::path p = fs::path(c.data) / name;
  if (!fs::exists(p))
    throw std::runtime_error(fmt::format(
        "data file '{}' is missing; run `fivefold prepare --text FILE --vocab N --out {}` first "
        "(config key 'data' names that folder)",
        p.string(), c.data));
  return p.string();
}

// Every token id must index the embedding; a shard from another tokenizer would not.
void check_token_range(const std::vector<int32_t>& tokens, int vocab, const std::string& path) {
  int32_t hi = 0;
  for (int32_t t : tokens) hi = std::max(hi, t);
  if (hi >= vocab)
    throw std::runtime_error(fmt::format(
        "token shard '{}' holds token id {} but the vocabulary has {} entries; the shard was "
        "made by a different tokenizer: re-run `fivefold prepare`",
        path, hi, vocab));
}

}  // namespace

RunTokenizer open_run_tokenizer(const TrainConfig& c) {
  RunTokenizer t;
  t.path = data_file(c, "tokenizer.model");
  const Tokenizer tokenizer(t.path);
  t.checksum = tokenizer.checksum();
  t.vocab_size = tokenizer.vocab_size();
  return t;
}

RunTokens read_run_tokens(const TrainConfig& c, const RunTokenizer& tokenizer) {
  const PreparedShards shards = prepared_shards(c.data);
  const TokenShardExpect expect{c.model.vocab_size, tokenizer.checksum, "the tokenizer " + tokenizer.path};
  // A split's shards in the order meta.json lists them, as one token sequence.
  auto read_split = [&](const std::vector<std::string>& paths) {
    std::vector<int32_t> all;
    for (const std::string& p : paths) {
      const std::vector<int32_t> part = read_token_shard(data_file(c, fs::path(p).filename().c_str()), expect);
      check_token_range(part, c.model.vocab_size, p);
      all.insert(all.end(), part.begin(), part.end());
    }
    return std::make_shared<const std::vector<int32_t>>(std::move(all));
  };
  RunTokens t;
  t.train = read_split(shards.train);
  t.val = read_split(shards.val);
  return t;
}

}  // namespace ff
