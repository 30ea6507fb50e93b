#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "io/safetensors.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;

TEST(SafeTensors, LayoutFollowsTheSpec) {
  ff::testing::TempDir dir;
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  const std::vector<uint16_t> b = {0x3F80, 0x4000, 0x4040, 0x4080};  // bf16 1, 2, 3, 4
  const std::string p = dir.file("model.safetensors");
  write_safetensors(
      p, {{"layers.0.w", "F32", {2, 3}, w.data(), 24}, {"norm", "BF16", {4}, b.data(), 8}},
      {{"format", "pt"}, {"step", "100"}});
  const std::string bytes = ff::testing::read_all(p);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 32);
  EXPECT_EQ(bytes[8], '{');
  EXPECT_EQ(safetensors_data_start(p), 8 + n);

  const nlohmann::json h = read_safetensors_header(p);
  EXPECT_EQ(h["__metadata__"]["format"], "pt");
  EXPECT_EQ(h["__metadata__"]["step"], "100");
  EXPECT_EQ(h["layers.0.w"]["dtype"], "F32");
  EXPECT_EQ(h["layers.0.w"]["shape"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(h["layers.0.w"]["data_offsets"], nlohmann::json::array({0, 24}));
  EXPECT_EQ(h["norm"]["dtype"], "BF16");
  EXPECT_EQ(h["norm"]["data_offsets"], nlohmann::json::array({24, 32}));
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n, w.data(), 24), 0);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n + 24, b.data(), 8), 0);
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
}

TEST(SafeTensors, ScalarsAndEmptyMetadata) {
  ff::testing::TempDir dir;
  const float one = 1.0f;
  write_safetensors(dir.file("s.safetensors"), {{"scale", "F32", {}, &one, 4}}, {});
  const nlohmann::json h = read_safetensors_header(dir.file("s.safetensors"));
  EXPECT_TRUE(h["__metadata__"].empty());
  EXPECT_TRUE(h["scale"]["shape"].empty());
  EXPECT_EQ(h["scale"]["data_offsets"], nlohmann::json::array({0, 4}));
}

TEST(SafeTensors, WriterRejectsInconsistentTensors) {
  ff::testing::TempDir dir;
  const std::vector<float> w(6);
  const std::string p = dir.file("m.safetensors");
  expect_error(
      [&] {
        write_safetensors(p, {{"w", "F32", {2, 3}, w.data(), 20}}, {});
      },
      {"\"w\"", "needs 24 bytes", "20 were given"});
  expect_error(
      [&] {
        write_safetensors(p, {{"w", "F64", {6}, w.data(), 48}}, {});
      },
      {"dtype \"F64\"", "F32 or BF16"});
  expect_error(
      [&] {
        write_safetensors(p, {{"w", "F32", {6}, w.data(), 24}, {"w", "F32", {6}, w.data(), 24}},
                          {});
      },
      {"duplicate"});
  EXPECT_FALSE(std::filesystem::exists(p));
}

TEST(SafeTensors, ReaderRejectsDamage) {
  ff::testing::TempDir dir;
  const std::vector<float> w(6, 2.0f);
  const std::string p = dir.file("m.safetensors");
  write_safetensors(p, {{"w", "F32", {2, 3}, w.data(), 24}}, {});
  ff::testing::truncate_to(p, std::filesystem::file_size(p) - 4);
  expect_error([&] { read_safetensors_header(p); }, {"truncated", "\"w\""});
  ff::testing::write_all(p, std::string("\xff\xff\xff\xff\xff\xff\x00\x00{}", 10));
  expect_error([&] { read_safetensors_header(p); }, {"not a safetensors file"});
  expect_error([&] { read_safetensors_header(dir.file("none.safetensors")); }, {"not found"});
}
