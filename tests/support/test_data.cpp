#include "test_data.h"

#include <cstdint>
#include <filesystem>
#include <fstream>

#include "core/rng.h"
#include "io/corpus/prepare.h"
#include "io/tokens/data_folder.h"
#include "io/tokens/token_shard.h"

namespace ff::testkit {

namespace fs = std::filesystem;

void write_corpus_text(const std::string& path, int lines, uint64_t seed) {
  static const char* words[] = {"and",  "the",   "lord", "said", "unto",  "moses", "in",
                                "land", "of",    "his",  "sons", "people", "shall", "go",
                                "out",  "came",  "to",   "pass", "that",  "earth", "heaven"};
  const int n_words = int(std::size(words));
  RngState rng{seed, 0};
  std::ofstream out(path);
  for (int l = 0; l < lines; ++l) {
    out << (l % 30 + 1) << ":" << (l % 7 + 1) << " And";
    int len = 6 + int(rng.next_below(10));
    // A Markov-ish walk: the next word depends on the previous one, so there is signal to learn.
    int w = int(rng.next_below(n_words));
    for (int i = 0; i < len; ++i) {
      w = (w * 7 + 3 + int(rng.next_below(3))) % n_words;
      out << ' ' << words[w];
    }
    out << ".\n";
  }
}

const std::string& tiny_data_dir() {
  static const std::string dir = [] {
    std::string d = temp_dir("data");
    write_corpus_text(d + "/corpus.txt", 3000, 7);
    prepare_corpus(d + "/corpus.txt", 320, d + "/prepared", 0.1);
    return d + "/prepared";
  }();
  return dir;
}

std::string only_shard(const std::string& dir, const std::string& split) {
  const DataFolderShards shards = data_folder_shards(dir);
  const std::vector<std::string>& list = split == "train" ? shards.train : shards.val;
  if (list.size() != 1)
    throw std::logic_error("test data " + dir + " has " + std::to_string(list.size()) + " " + split +
                           " shards; the test expects one");
  return list.front();
}

std::string masked_copy_of_tiny_data(const LossMaskMaker& loss_mask) {
  const fs::path from = tiny_data_dir(), to = fs::path(temp_dir("masked")) / "prepared";
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from))
    if (e.path().extension() != ".bin") fs::copy(e.path(), to / e.path().filename(), fs::copy_options::recursive);
  for (const char* split : {"train", "val"}) {
    const fs::path path = only_shard(from.string(), split);
    const TokenShardInfo info = read_token_shard_info(path.string());
    const std::vector<int32_t> tokens = read_token_shard(path.string());
    const std::vector<uint8_t> mask = loss_mask(split, tokens.size());
    write_token_shard((to / path.filename()).string(), tokens, int(info.vocab_size), info.tokenizer_checksum, &mask);
  }
  return to.string();
}

const std::string& tiny_masked_data_dir() {
  static const std::string dir = masked_copy_of_tiny_data([](const std::string&, size_t n) {
    RngState rng{99, 0};
    std::vector<uint8_t> mask;
    while (mask.size() < n) {
      mask.insert(mask.end(), size_t(1 + rng.next_below(48)), uint8_t(0));  // a prompt
      mask.insert(mask.end(), size_t(1 + rng.next_below(16)), uint8_t(1));  // its completion
    }
    mask.resize(n);
    return mask;
  });
  return dir;
}

std::string config_path(const std::string& name) {
  return std::string(FIVEFOLD_SOURCE_DIR) + "/configs/" + name;
}

}  // namespace ff::testkit
