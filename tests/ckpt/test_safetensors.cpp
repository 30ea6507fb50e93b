#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "ckpt/safetensors.h"
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

namespace {

// A safetensors file from a literal header and a data region of data_bytes zero bytes.
std::string hand_made(const ff::testing::TempDir& dir, const std::string& header, size_t data_bytes) {
  const std::string p = dir.file("hand.safetensors");
  const uint64_t n = header.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &n, 8);
  ff::testing::write_all(p, bytes + header + std::string(data_bytes, '\0'));
  return p;
}

}  // namespace

// Each of these used to be accepted.
TEST(SafeTensors, ReaderRefusesForgedHeaders) {
  ff::testing::TempDir dir;
  auto refused = [&](const std::string& header, size_t data_bytes, std::initializer_list<std::string> words) {
    const std::string p = hand_made(dir, header, data_bytes);
    expect_error([&] { read_safetensors_header(p); }, words);
  };
  // 2^62 F32 elements: 2^64 bytes, which wrapped to 0 and matched an empty span.
  refused(R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0,
          {"hand.safetensors", "\"w\"", "[4611686018427387904]", "0 data bytes"});
  refused(R"({"w":{"dtype":"XX","shape":[2],"data_offsets":[0,8]}})", 8, {"\"w\"", "dtype \"XX\""});
  refused(R"({"w":{"dtype":"","shape":[2],"data_offsets":[0,8]}})", 8, {"\"w\"", "dtype \"\""});
  refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
          12, {"\"b\"", "overlaps"});
  refused(R"({"__metadata__":[1,2],"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4,
          {"__metadata__", "not an object"});
  refused(R"({"__metadata__":{"step":5},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4,
          {"__metadata__", "\"step\"", "not a string"});
  refused(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 9, {"5 trailing bytes"});
  refused(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, {"[0, 4)", "belong to no tensor"});
  // The same header with exactly its data is accepted.
  EXPECT_EQ(read_safetensors_header(
                hand_made(dir, R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4))["w"]["shape"],
            nlohmann::json::array({1}));
}
