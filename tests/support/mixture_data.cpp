#include "mixture_data.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "io/tokens/token_shard.h"
#include "test_data.h"

namespace ff::testkit {

namespace fs = std::filesystem;

namespace {

// Writes tokens as `parts` shards named PREFIX-0000i.bin; returns their names.
nlohmann::json write_parts(const fs::path& dir, const std::string& prefix, const std::vector<int32_t>& tokens,
                           int parts, int vocab, uint64_t checksum) {
  nlohmann::json names = nlohmann::json::array();
  const size_t n = tokens.size();
  for (int p = 0; p < parts; ++p) {
    const size_t lo = n * size_t(p) / size_t(parts), hi = n * size_t(p + 1) / size_t(parts);
    const std::string name = prefix + "-0000" + std::to_string(p) + ".bin";
    write_token_shard((dir / name).string(), std::vector<int32_t>(tokens.begin() + long(lo), tokens.begin() + long(hi)),
                      vocab, checksum);
    names.push_back(name);
  }
  return names;
}

std::vector<int32_t> reversed(std::vector<int32_t> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

}  // namespace

std::string make_sharded_folder(const std::string& tag, const std::string& tokenizer_from,
                                const std::vector<int32_t>& train, const std::vector<int32_t>& val, int shards,
                                uint64_t tokenizer_checksum) {
  const fs::path dir = temp_dir(tag);
  fs::copy_file(fs::path(tokenizer_from) / "tokenizer.model", dir / "tokenizer.model");
  const int vocab = int(read_token_shard_info(only_shard(tokenizer_from, "train")).vocab_size);
  nlohmann::json meta;
  meta["train_shards"] = write_parts(dir, "train", train, shards, vocab, tokenizer_checksum);
  meta["val_shards"] = write_parts(dir, "val", val, 2, vocab, tokenizer_checksum);
  write_file_atomic((dir / "meta.json").string(), meta.dump(2));
  return dir.string();
}

const std::string& tiny_sharded_dir() {
  static const std::string dir = [] {
    const std::string tiny = tiny_data_dir(), train = only_shard(tiny, "train"), val = only_shard(tiny, "val");
    return make_sharded_folder("sharded", tiny, read_token_shard(train), read_token_shard(val), 3,
                               read_token_shard_info(train).tokenizer_checksum);
  }();
  return dir;
}

const std::string& mixture_partner_dir() {
  static const std::string dir = [] {
    const std::string tiny = tiny_data_dir(), train = only_shard(tiny, "train"), val = only_shard(tiny, "val");
    return make_sharded_folder("partner", tiny, reversed(read_token_shard(train)), reversed(read_token_shard(val)), 3,
                               read_token_shard_info(train).tokenizer_checksum);
  }();
  return dir;
}

}  // namespace ff::testkit
