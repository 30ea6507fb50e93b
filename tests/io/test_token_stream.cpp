// Token shards written in pieces and read in windows, their loss masks, version 2 shards, and
// the data loader's masked targets.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "io/byte_fields.h"
#include "io/checksum.h"
#include "io/tokens/data_loader.h"
#include "io/tokens/token_shard.h"
#include "io/tokens/token_shard_reader.h"
#include "io/tokens/token_shard_writer.h"
#include "io/tokens/token_stream.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;
using ff::testing::ramp;

namespace {

std::vector<uint8_t> some_mask(size_t n) {
  std::vector<uint8_t> m(n);
  for (size_t i = 0; i < n; ++i) m[i] = uint8_t((i / 3 + i / 17) % 2);
  return m;
}

}  // namespace

// A shard appended in uneven pieces (across the 1 MiB checksum blocks) is byte for byte the shard
// written at once, and windows read anywhere give back the tokens and mask bits.
TEST(TokenShardStream, PiecesEqualOneWriteAndWindowsReadBack) {
  ff::testing::TempDir dir;
  const size_t n = 1'500'000;  // 3 MB of u16: three checksum blocks
  const auto tokens = ramp(n, 50000);
  const auto mask = some_mask(n);
  write_token_shard(dir.file("once.bin"), tokens, 50000, 7, &mask);
  {
    TokenShardWriter w(dir.file("pieces.bin"), 50000, 7, true);
    for (size_t at = 0, piece = 1; at < n; at += piece, piece = piece * 3 + 1) {
      const size_t k = std::min(piece, n - at);
      w.append(tokens.data() + at, k, mask.data() + at);
    }
    EXPECT_FALSE(std::filesystem::exists(dir.file("pieces.bin")));  // nothing before commit
    w.commit();
  }
  EXPECT_EQ(ff::testing::read_all(dir.file("once.bin")), ff::testing::read_all(dir.file("pieces.bin")));
  EXPECT_EQ(std::filesystem::file_size(dir.file("once.bin")), 48u + 2u * n + (n + 7) / 8);
  const TokenShardReader r(dir.file("pieces.bin"));
  r.verify();
  EXPECT_TRUE(r.has_loss_mask());
  EXPECT_EQ(r.info().version, 3u);
  for (uint64_t begin : {uint64_t(0), uint64_t(5), uint64_t(524287), uint64_t(n - 9)}) {
    std::vector<int32_t> got(9);
    std::vector<uint8_t> got_mask(9);
    r.read_tokens(begin, 9, got.data());
    r.read_loss_mask(begin, 9, got_mask.data());
    for (size_t i = 0; i < 9; ++i) {
      EXPECT_EQ(got[i], tokens[begin + i]) << begin + i;
      EXPECT_EQ(got_mask[i], mask[begin + i]) << begin + i;
    }
  }
  expect_error([&] { std::vector<int32_t> x(10); r.read_tokens(n - 9, 10, x.data()); }, {"past its"});
}

// A flipped mask bit is damage like any other.
TEST(TokenShardStream, DamagedMaskFailsTheChecksum) {
  ff::testing::TempDir dir;
  const auto tokens = ramp(1000, 300);
  const auto mask = some_mask(1000);
  write_token_shard(dir.file("a.bin"), tokens, 300, 0, &mask);
  ff::testing::flip_byte(dir.file("a.bin"), 48 + 2000 + 10);
  expect_error([&] { read_token_shard(dir.file("a.bin")); }, {"checksum mismatch"});
}

// Version 2 (written before shards had masks) still reads: built here from its documented layout.
TEST(TokenShardStream, VersionTwoShardsStillRead) {
  ff::testing::TempDir dir;
  const std::vector<uint16_t> payload = {5, 1, 299, 0};
  unsigned char h[48] = {};
  std::memcpy(h, "FFTOKENS", 8);
  detail::put_field<uint32_t>(h, 8, 2);
  detail::put_field<uint32_t>(h, 12, 2);
  detail::put_field<uint64_t>(h, 16, payload.size());
  detail::put_field<uint32_t>(h, 32, 300);
  detail::put_field<uint64_t>(h, 40, 99);
  unsigned char covered[24];
  std::memcpy(covered, h + 32, 16);
  detail::put_field<uint64_t>(covered, 16, checksum64(payload.data(), payload.size() * 2));
  detail::put_field<uint64_t>(h, 24, checksum64(covered, sizeof(covered)));
  ff::testing::write_all(dir.file("v2.bin"), std::string(reinterpret_cast<char*>(h), 48) +
                                                 std::string(reinterpret_cast<const char*>(payload.data()), 8));
  EXPECT_EQ(read_token_shard(dir.file("v2.bin"), {300, 99, "tok"}), (std::vector<int32_t>{5, 1, 299, 0}));
  ff::testing::flip_byte(dir.file("v2.bin"), 50);
  expect_error([&] { read_token_shard(dir.file("v2.bin")); }, {"checksum mismatch"});
}

// Several shards read as one stream: a window may start in one and end in the next.
TEST(TokenShardStream, ShardsConcatenateIntoOneStream) {
  ff::testing::TempDir dir;
  std::vector<int32_t> all(250);
  std::iota(all.begin(), all.end(), 0);
  std::vector<uint8_t> mask = some_mask(250);
  std::vector<std::string> paths;
  for (size_t at : {0, 100, 130}) {
    const size_t end = at == 0 ? 100 : at == 100 ? 130 : 250;
    const std::vector<int32_t> part(all.begin() + at, all.begin() + end);
    const std::vector<uint8_t> part_mask(mask.begin() + at, mask.begin() + end);
    paths.push_back(dir.file("s" + std::to_string(at) + ".bin"));
    write_token_shard(paths.back(), part, 300, 0, &part_mask);
  }
  const auto stream = open_token_shards(paths, {300, 0, "tok"});
  EXPECT_EQ(stream->size(), 250u);
  std::vector<int32_t> got(60);
  std::vector<uint8_t> got_mask(60);
  stream->read(90, 60, got.data(), got_mask.data());
  for (size_t i = 0; i < 60; ++i) EXPECT_EQ(got[i], int32_t(90 + i));
  EXPECT_EQ(got_mask, std::vector<uint8_t>(mask.begin() + 90, mask.begin() + 150));
  // A split mixing masked and unmasked shards is refused by name.
  write_token_shard(dir.file("plain.bin"), {1, 2}, 300);
  expect_error([&] { open_token_shards({paths[0], dir.file("plain.bin")}, {300, 0, "tok"}); },
               {"plain.bin", "no loss mask", "one prepare"});
}

// Masked-out targets become -1; the count covers every row of the global batch, whichever rows a
// rank reads, and equals a direct count over the windows.
TEST(TokenShardStream, LoaderMasksTargetsAndCountsTheWholeBatch) {
  const size_t n = 401;
  std::vector<int32_t> tokens(n);
  std::iota(tokens.begin(), tokens.end(), 0);
  const auto mask = some_mask(n);
  const auto stream = tokens_in_memory(tokens, mask);
  const int T = 10, G = 8;
  DataLoader whole(stream, T, 3), half(stream, T, 3);
  std::vector<int32_t> x(G * T), y(G * T), hx(G / 2 * T), hy(G / 2 * T);
  for (int step = 0; step < 12; ++step) {  // past an epoch (40 windows)
    const uint64_t count = whole.next_batch(G, 0, G, x.data(), y.data());
    EXPECT_EQ(half.next_batch(G, G / 2, G / 2, hx.data(), hy.data()), count);
    uint64_t direct = 0;
    for (int r = 0; r < G; ++r) {
      const size_t start = size_t(x[size_t(r) * T]);  // token i has value i
      for (int t = 0; t < T; ++t) {
        const size_t target = start + size_t(t) + 1;
        direct += mask[target];
        EXPECT_EQ(y[size_t(r) * T + t], mask[target] ? int32_t(target) : -1);
      }
    }
    EXPECT_EQ(count, direct);
    EXPECT_TRUE(std::equal(hy.begin(), hy.end(), y.begin() + G / 2 * T));
  }
}
