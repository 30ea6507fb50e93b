// Token shards: damaged copies are refused or read back identical; forged copies (checksum
// recomputed) are refused unless every id still fits the vocabulary the reader holds.
#include <algorithm>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "io/checksum.h"
#include "io/tokens/token_shard.h"

using namespace ff;
using namespace ff::fuzz;

namespace {

constexpr int kVocab = 1000;
constexpr uint64_t kTokenizerSum = 0x5EED5EED5EEDull;

std::vector<int32_t> some_tokens() {
  std::vector<int32_t> t(777);
  for (size_t i = 0; i < t.size(); ++i) t[i] = int32_t((i * 7919 + 13) % kVocab);
  return t;
}

// The format's rule, restated from token_shard.h: the checksum at 24 covers the 16 bytes at 32
// followed by the body's sum: for version 3 the checksum64 of the checksum64s of its 1 MiB
// blocks, for version 2 the checksum64 of the payload.
void reseal(std::string& b) {
  if (b.size() < 48) return;
  unsigned char buf[24];
  std::memcpy(buf, b.data() + 32, 16);
  uint32_t version;
  std::memcpy(&version, b.data() + 8, 4);
  uint64_t body = checksum64(b.data() + 48, b.size() - 48);
  if (version != 2) {
    std::vector<uint64_t> blocks;
    for (size_t at = 48; at < b.size(); at += size_t(1) << 20)
      blocks.push_back(checksum64(b.data() + at, std::min(b.size() - at, size_t(1) << 20)));
    body = checksum64(blocks.data(), blocks.size() * 8);
  }
  std::memcpy(buf + 16, &body, 8);
  const uint64_t sum = checksum64(buf, sizeof(buf));
  std::memcpy(b.data() + 24, &sum, 8);
}

}  // namespace

TEST(FuzzTokenShard, DamagedCopiesAreRefusedOrReadIdentically) {
  const Scratch scratch;
  const std::string dir = scratch.path(), good_path = dir + "/good.bin", path = dir + "/case.bin";
  const std::vector<int32_t> tokens = some_tokens();
  write_token_shard(good_path, tokens, kVocab, kTokenizerSum);
  const std::string good = read_bytes(good_path);
  RngState rng{16001, 0};
  int refused = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string bad = mutate(good, rng);
    write_bytes(path, bad);
    std::vector<int32_t> got;
    if (run_case(path, [&] { got = read_token_shard(path, {kVocab, kTokenizerSum, "the model"}); }) ==
        Outcome::accepted) {
      ASSERT_EQ(got, tokens) << "case " << i << " read a damaged shard as different tokens";
    } else {
      ++refused;
    }
  }
  // Nearly every mutation touches checked bytes; any that did not would read back the same
  // tokens, asserted above.
  EXPECT_GT(refused, 1400);
}

TEST(FuzzTokenShard, ForgedCopiesWithARecomputedChecksumStayInRange) {
  const Scratch scratch;
  const std::string dir = scratch.path(), good_path = dir + "/good.bin", path = dir + "/case.bin";
  write_token_shard(good_path, some_tokens(), kVocab, kTokenizerSum);
  const std::string good = read_bytes(good_path);
  RngState rng{16002, 0};
  int accepted = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string bad = mutate(good, rng);
    reseal(bad);
    write_bytes(path, bad);
    std::vector<int32_t> got;
    if (run_case(path, [&] { got = read_token_shard(path, {kVocab, kTokenizerSum, "the model"}); }) ==
        Outcome::accepted) {
      ++accepted;
      // Forged but consistent: what was read must still suit a 1000-token model and tokenizer.
      const TokenShardInfo info = read_token_shard_info(path);
      ASSERT_EQ(info.vocab_size, uint32_t(kVocab)) << "case " << i;
      ASSERT_EQ(info.tokenizer_checksum, kTokenizerSum) << "case " << i;
      ASSERT_EQ(got.size(), info.tokens);
      for (int32_t id : got) ASSERT_TRUE(id >= 0 && id < kVocab) << "case " << i << " id " << id;
    }
  }
  EXPECT_GT(accepted, 0);  // some forgeries (payload ids within range) are valid files
}

TEST(FuzzTokenShard, ForgedVocabFieldIsRefused) {
  const Scratch scratch;
  const std::string dir = scratch.path(), path = dir + "/a.bin";
  write_token_shard(path, some_tokens(), kVocab, kTokenizerSum);
  for (uint32_t vocab : {1u, 999u, 1001u, 4096u, 0xFFFFFFFFu}) {
    std::string b = read_bytes(path);
    std::memcpy(b.data() + 32, &vocab, 4);
    reseal(b);
    write_bytes(dir + "/forged.bin", b);
    EXPECT_EQ(run_case(dir + "/forged.bin", [&] { read_token_shard(dir + "/forged.bin", {kVocab, 0, "m"}); }),
              Outcome::refused)
        << vocab;
  }
}
