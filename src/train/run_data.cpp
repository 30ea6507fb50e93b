#include "train/run_data.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "io/prepare.h"
#include "io/token_shard.h"
#include "io/token_stream.h"
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
  // Each split's shards in the order meta.json lists them, one stream. The shard's vocabulary must
  // be the model's, and every id lies below it (verified), so every id indexes the embedding.
  auto existing = [&](const std::vector<std::string>& paths) {
    std::vector<std::string> out;
    for (const std::string& p : paths) out.push_back(data_file(c, fs::path(p).filename().c_str()));
    return out;
  };
  return RunTokens{open_token_shards(existing(shards.train), expect), open_token_shards(existing(shards.val), expect)};
}

}  // namespace ff
