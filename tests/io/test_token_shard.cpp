#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "io/tokens/token_shard.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;
using ff::testing::ramp;

TEST(TokenShard, RoundTripU16) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("a.bin");
  const auto tokens = ramp(1000, 4096);
  write_token_shard(p, tokens, 4096);
  EXPECT_EQ(read_token_shard(p), tokens);
  EXPECT_EQ(std::filesystem::file_size(p), 48u + 2u * 1000u);
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
  TokenShardInfo info = read_token_shard_info(p);
  EXPECT_EQ(info.version, 3u);
  EXPECT_FALSE(info.loss_mask);
  EXPECT_EQ(info.dtype_bytes, 2u);
  EXPECT_EQ(info.tokens, 1000u);
  EXPECT_EQ(info.vocab_size, 4096u);
  EXPECT_EQ(ff::testing::read_all(p).substr(0, 8), "FFTOKENS");
}

TEST(TokenShard, BoundaryVocabSizesPickTheDtype) {
  ff::testing::TempDir dir;
  std::vector<int32_t> tokens = {0, 65534, 12};
  write_token_shard(dir.file("u16.bin"), tokens, 65535);
  EXPECT_EQ(read_token_shard_info(dir.file("u16.bin")).dtype_bytes, 2u);
  EXPECT_EQ(read_token_shard(dir.file("u16.bin")), tokens);
  tokens.push_back(100000);
  write_token_shard(dir.file("u32.bin"), tokens, 100001);
  EXPECT_EQ(read_token_shard_info(dir.file("u32.bin")).dtype_bytes, 4u);
  EXPECT_EQ(read_token_shard(dir.file("u32.bin")), tokens);
  EXPECT_EQ(std::filesystem::file_size(dir.file("u32.bin")), 48u + 4u * 4u);
}

TEST(TokenShard, EmptyShardRoundTrips) {
  ff::testing::TempDir dir;
  write_token_shard(dir.file("e.bin"), {}, 300);
  EXPECT_TRUE(read_token_shard(dir.file("e.bin")).empty());
}

TEST(TokenShard, OverwriteReplacesTheOldFile) {
  ff::testing::TempDir dir;
  write_token_shard(dir.file("a.bin"), {1, 2, 3}, 10);
  write_token_shard(dir.file("a.bin"), {4, 5}, 10);
  EXPECT_EQ(read_token_shard(dir.file("a.bin")), (std::vector<int32_t>{4, 5}));
}

TEST(TokenShard, FlippedPayloadByteIsACorruptChecksum) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("a.bin");
  write_token_shard(p, ramp(500, 1000), 1000);
  ff::testing::flip_byte(p, 48 + 333);
  expect_error([&] { read_token_shard(p); },
               {p, "checksum mismatch", "corrupt", "re-run fivefold prepare"});
}

TEST(TokenShard, TruncatedFileIsReported) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("a.bin");
  write_token_shard(p, ramp(500, 1000), 1000);
  ff::testing::truncate_to(p, 48 + 999);
  expect_error([&] { read_token_shard(p); },
               {"truncated", "500 tokens", "re-run fivefold prepare"});
  ff::testing::truncate_to(p, 20);
  expect_error([&] { read_token_shard(p); }, {"truncated", "48-byte header"});
}

TEST(TokenShard, TrailingBytesAreASizeMismatch) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("a.bin");
  write_token_shard(p, {1, 2, 3}, 10);
  ff::testing::write_all(p, ff::testing::read_all(p) + "xx");
  expect_error([&] { read_token_shard(p); }, {"size mismatch"});
}

TEST(TokenShard, WrongMagicIsNotAShard) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("a.bin");
  write_token_shard(p, {1, 2, 3}, 10);
  ff::testing::flip_byte(p, 0);
  expect_error([&] { read_token_shard(p); }, {"not a fivefold token shard"});
  ff::testing::write_all(p, "hello");  // shorter than any header, still not a shard
  expect_error([&] { read_token_shard(p); }, {"truncated"});
}

TEST(TokenShard, UnsupportedVersionAndDtype) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("a.bin");
  write_token_shard(p, {1, 2, 3}, 10);
  std::string b = ff::testing::read_all(p);
  b[8] = 9;  // version 9
  ff::testing::write_all(p, b);
  expect_error([&] { read_token_shard(p); }, {"unsupported version 9"});
  b[8] = 1;
  ff::testing::write_all(p, b);
  expect_error([&] { read_token_shard(p); }, {"version 1", "not covered by the checksum", "prepare"});
  b[8] = 2;
  b[12] = 3;  // dtype 3 bytes
  ff::testing::write_all(p, b);
  expect_error([&] { read_token_shard(p); }, {"unsupported dtype"});
}

TEST(TokenShard, MissingFileSaysRunPrepare) {
  expect_error([] { read_token_shard("/nonexistent/dir/train.bin"); },
               {"/nonexistent/dir/train.bin", "not found", "fivefold prepare"});
}

TEST(TokenShard, WriterRejectsIdsOutsideTheVocab) {
  ff::testing::TempDir dir;
  expect_error(
      [&] {
        write_token_shard(dir.file("a.bin"), {1, 10, 2}, 10);
      },
      {"token id 10", "position 1", "outside [0, 10)"});
  expect_error([&] { write_token_shard(dir.file("a.bin"), {-1}, 10); }, {"token id -1"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("a.bin")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("a.bin.tmp")));
}

// The vocab field used to lie outside the checksum, so a damaged (or forged) vocab widened the id
// check without any error.
TEST(TokenShard, VocabFieldIsCoveredByTheChecksum) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("a.bin");
  write_token_shard(p, {1, 2, 3}, 10);
  std::string b = ff::testing::read_all(p);
  b[32] = char(200);  // vocab 10 -> 200
  ff::testing::write_all(p, b);
  expect_error([&] { read_token_shard(p); }, {p, "checksum mismatch"});
  b = ff::testing::read_all(p);
  b[32] = 10;
  b[40] = char(b[40] ^ 1);  // the recorded tokenizer checksum is covered too
  ff::testing::write_all(p, b);
  expect_error([&] { read_token_shard(p); }, {p, "checksum mismatch"});
}

TEST(TokenShard, ReaderRefusesAnotherVocabularyEitherWay) {
  ff::testing::TempDir dir;
  const std::string big = dir.file("big.bin"), small = dir.file("small.bin");
  write_token_shard(big, {4000, 1, 2}, 4096);
  write_token_shard(small, {1000, 1, 2}, 1024);
  // A larger-vocabulary shard would index past a 1024-token model's logits.
  expect_error([&] { read_token_shard(big, {1024, 0, "the model"}); },
               {big, "vocabulary of 4096", "the model has 1024"});
  // The reverse fits in range but scores text encoded by another tokenizer.
  expect_error([&] { read_token_shard(small, {4096, 0, "the model"}); },
               {small, "vocabulary of 1024", "the model has 4096"});
  EXPECT_EQ(read_token_shard(small, {1024, 0, "the model"}), (std::vector<int32_t>{1000, 1, 2}));
}

// The tokenizer's checksum travels with the shard and is compared (a replaced tokenizer of the
// same size used to pass unnoticed).
TEST(TokenShard, TokenizerChecksumIsRecordedAndCompared) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("a.bin");
  write_token_shard(p, {1, 2, 3}, 10, 0xABCDEF0123ull);
  EXPECT_EQ(read_token_shard_info(p).tokenizer_checksum, 0xABCDEF0123ull);
  EXPECT_EQ(read_token_shard(p, {10, 0xABCDEF0123ull, "tok"}), (std::vector<int32_t>{1, 2, 3}));
  expect_error([&] { read_token_shard(p, {10, 0xABCDEF0124ull, "the tokenizer t.model"}); },
               {p, "different tokenizer than", "t.model"});
}
