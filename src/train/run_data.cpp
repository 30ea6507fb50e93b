#include "train/run_data.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

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
  t.bos_id = tokenizer.bos_id();
  t.eos_id = tokenizer.eos_id();
  return t;
}

RunTokens read_run_tokens(const TrainConfig& c, const RunTokenizer& tokenizer) {
  const std::string train_path = data_file(c, "train.bin"), val_path = data_file(c, "val.bin");
  const TokenShardExpect expect{c.model.vocab_size, tokenizer.checksum, "the tokenizer " + tokenizer.path};
  RunTokens t;
  t.train = std::make_shared<const std::vector<int32_t>>(read_token_shard(train_path, expect));
  t.val = std::make_shared<const std::vector<int32_t>>(read_token_shard(val_path, expect));
  check_token_range(*t.train, c.model.vocab_size, train_path);
  check_token_range(*t.val, c.model.vocab_size, val_path);
  return t;
}

}  // namespace ff
