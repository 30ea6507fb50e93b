#include "train/run_data.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

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
  const std::string train_path = data_file(c, "train.bin"), val_path = data_file(c, "val.bin");
  const TokenShardExpect expect{c.model.vocab_size, tokenizer.checksum, "the tokenizer " + tokenizer.path};
  // The shard's vocabulary must be the model's, and every id lies below it (verified), so every
  // id indexes the embedding.
  return RunTokens{open_token_shards({train_path}, expect), open_token_shards({val_path}, expect)};
}

}  // namespace ff
