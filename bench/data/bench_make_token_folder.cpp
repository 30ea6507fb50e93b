// A data folder of random token ids for memory benchmarks, written the way a streaming prepare
// writes one: SHARDS train shards (TokenShardWriter, one pass each, bounded memory), one small
// validation shard, meta.json listing them and the tokenizer copied in. Then it opens the train
// shards as training does (every shard verified: checksum and id range) and prints the time of
// each phase, so the cost of verification per GB is measured on the same files.
//   bench_make_token_folder OUT TOKENIZER_MODEL TRAIN_TOKENS SHARDS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "io/tokens/data_folder.h"
#include "io/tokens/token_shard_writer.h"
#include "io/tokens/token_stream.h"
#include "io/tokenizer/sentencepiece_tokenizer.h"

using namespace ff;
namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// xorshift64*: fast, and the ids need only cover the vocabulary, not be good random numbers.
struct Ids {
  uint64_t state;
  int32_t next(int vocab) {
    state ^= state >> 12, state ^= state << 25, state ^= state >> 27;
    return int32_t((state * 0x2545F4914F6CDD1Dull >> 33) % uint64_t(vocab));
  }
};

void write_shard(const fs::path& path, uint64_t tokens, int vocab, uint64_t checksum, Ids& ids) {
  TokenShardWriter w(path.string(), vocab, checksum, false);
  std::vector<int32_t> chunk(1 << 20);
  for (uint64_t done = 0; done < tokens;) {
    const size_t n = size_t(std::min<uint64_t>(chunk.size(), tokens - done));
    for (size_t i = 0; i < n; ++i) chunk[i] = ids.next(vocab);
    w.append(chunk.data(), n);
    done += n;
  }
  w.commit();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) return std::fprintf(stderr, "usage: bench_make_token_folder OUT TOKENIZER_MODEL TRAIN_TOKENS SHARDS\n"), 2;
  const fs::path out = argv[1];
  const uint64_t tokens = std::strtoull(argv[3], nullptr, 10);
  const int shards = std::atoi(argv[4]);
  const SentencePieceTokenizer tok(argv[2]);
  fs::create_directories(out);
  fs::copy_file(argv[2], out / "tokenizer.model", fs::copy_options::overwrite_existing);
  Ids ids{0x9E3779B97F4A7C15ull};
  auto t0 = std::chrono::steady_clock::now();
  nlohmann::json meta;
  meta["train_shards"] = nlohmann::json::array();
  for (int s = 0; s < shards; ++s) {
    char name[32];
    std::snprintf(name, sizeof name, "train-%05d.bin", s);
    const uint64_t lo = tokens * uint64_t(s) / uint64_t(shards), hi = tokens * uint64_t(s + 1) / uint64_t(shards);
    write_shard(out / name, hi - lo, tok.vocab_size(), tok.checksum(), ids);
    meta["train_shards"].push_back(name);
  }
  write_shard(out / "val-00000.bin", 1 << 16, tok.vocab_size(), tok.checksum(), ids);
  meta["val_shards"] = {"val-00000.bin"};
  write_file_atomic((out / "meta.json").string(), meta.dump(2));
  const double write_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const DataFolderShards files = data_folder_shards(out.string());
  const auto stream = open_token_shards(files.train, TokenShardExpect{tok.vocab_size(), tok.checksum(), "bench"});
  const double verify_s = seconds_since(t0);
  uint64_t bytes = 0;
  for (const auto& f : files.train) bytes += fs::file_size(f);
  std::printf("tokens %llu bytes %llu write_s %.3f verify_s %.3f\n", (unsigned long long)stream->size(),
              (unsigned long long)bytes, write_s, verify_s);
  return 0;
}
