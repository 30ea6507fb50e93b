#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "io/checkpoint_file.h"
#include "io_test_util.h"

using namespace ff;
using ff::testing::expect_error;

namespace {

// Writes {meta, params (1000 floats), rng (13 odd bytes), empty} and returns the path.
std::string write_sample(const ff::testing::TempDir& dir, std::vector<float>* params_out) {
  std::vector<float> params(1000);
  for (size_t i = 0; i < params.size(); ++i) params[i] = float(i) * 0.5f - 3.0f;
  const char rng[13] = "philox-state";
  CheckpointWriter w;
  w.set_meta({{"step", 120}, {"model", {{"layers", 4}}}});
  w.add_section("params", params.data(), params.size() * sizeof(float));
  w.add_section("rng", rng, sizeof(rng));
  w.add_section("empty", nullptr, 0);
  const std::string p = dir.file("ckpt.ff");
  w.write(p);
  if (params_out) *params_out = params;
  return p;
}

}  // namespace

TEST(CheckpointFile, RoundTrip) {
  ff::testing::TempDir dir;
  std::vector<float> params;
  const std::string p = write_sample(dir, &params);
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
  EXPECT_EQ(ff::testing::read_all(p).substr(0, 8), "FFCHKPNT");

  CheckpointReader r(p);
  EXPECT_EQ(r.meta()["step"], 120);
  EXPECT_EQ(r.meta()["model"]["layers"], 4);
  EXPECT_TRUE(r.has("params"));
  EXPECT_FALSE(r.has("optimizer"));
  EXPECT_EQ(r.section_names(), (std::vector<std::string>{"params", "rng", "empty"}));

  auto s = r.section("params");
  ASSERT_EQ(s.size(), 4000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data()) % 64, 0u);
  EXPECT_EQ(std::memcmp(s.data(), params.data(), 4000), 0);
  auto rng = r.section("rng");
  ASSERT_EQ(rng.size(), 13u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(rng.data()) % 64, 0u);
  EXPECT_STREQ(reinterpret_cast<const char*>(rng.data()), "philox-state");
  EXPECT_EQ(r.section("empty").size(), 0u);
}

TEST(CheckpointFile, AddSectionCopiesAndViewDoesNot) {
  ff::testing::TempDir dir;
  std::vector<int> a = {1, 2, 3}, b = {4, 5, 6};
  CheckpointWriter w;
  w.add_section("copied", a.data(), sizeof(int) * 3);
  w.add_section_view("viewed", b.data(), sizeof(int) * 3);
  a[0] = 100;
  b[0] = 200;
  w.write(dir.file("c.ff"));
  CheckpointReader r(dir.file("c.ff"));
  EXPECT_EQ(reinterpret_cast<const int*>(r.section("copied").data())[0], 1);
  EXPECT_EQ(reinterpret_cast<const int*>(r.section("viewed").data())[0], 200);
  EXPECT_TRUE(r.meta().is_object());
}

TEST(CheckpointFile, MissingSectionIsNamed) {
  ff::testing::TempDir dir;
  CheckpointReader r(write_sample(dir, nullptr));
  expect_error([&] { r.section("optimizer"); }, {"no section \"optimizer\"", "params, rng, empty"});
}

TEST(CheckpointFile, FlippedSectionByteNamesTheSection) {
  ff::testing::TempDir dir;
  const std::string p = write_sample(dir, nullptr);
  const auto size = std::filesystem::file_size(p);
  // The rng section is the 64 bytes before the (empty) end: data is params (4000 -> 4032), rng.
  ff::testing::flip_byte(p, size_t(size) - 64 + 3);
  expect_error([&] { CheckpointReader r(p); },
               {"checkpoint " + p + " is damaged", "section rng checksum mismatch",
                "use an earlier checkpoint"});
}

TEST(CheckpointFile, FlippedHeaderByteIsDetected) {
  ff::testing::TempDir dir;
  const std::string p = write_sample(dir, nullptr);
  ff::testing::flip_byte(p, 40);
  expect_error([&] { CheckpointReader r(p); }, {"is damaged", "header checksum mismatch"});
}

TEST(CheckpointFile, TruncationIsDetected) {
  ff::testing::TempDir dir;
  const std::string p = write_sample(dir, nullptr);
  const auto size = std::filesystem::file_size(p);
  ff::testing::truncate_to(p, size_t(size) - 1);
  expect_error([&] { CheckpointReader r(p); }, {"truncated", "use an earlier checkpoint"});
  ff::testing::truncate_to(p, 60);
  expect_error([&] { CheckpointReader r(p); }, {"truncated"});
  ff::testing::truncate_to(p, 10);
  expect_error([&] { CheckpointReader r(p); }, {"truncated"});
}

TEST(CheckpointFile, TrailingGarbageIsDetected) {
  ff::testing::TempDir dir;
  const std::string p = write_sample(dir, nullptr);
  ff::testing::write_all(p, ff::testing::read_all(p) + "junk");
  expect_error([&] { CheckpointReader r(p); }, {"is damaged", "file size mismatch"});
}

TEST(CheckpointFile, WrongMagicAndVersion) {
  ff::testing::TempDir dir;
  const std::string p = write_sample(dir, nullptr);
  ff::testing::flip_byte(p, 2);
  expect_error([&] { CheckpointReader r(p); }, {"not a fivefold checkpoint"});
  ff::testing::flip_byte(p, 2);
  ff::testing::flip_byte(p, 8);
  expect_error([&] { CheckpointReader r(p); }, {"unsupported version"});
}

TEST(CheckpointFile, MissingFileAndWriterMisuse) {
  expect_error([] { CheckpointReader r("/nonexistent/step_100.ff"); },
               {"/nonexistent/step_100.ff", "not found"});
  CheckpointWriter w;
  w.add_section("params", "x", 1);
  expect_error([&] { w.add_section("params", "y", 1); }, {"\"params\" was added twice"});
  expect_error([&] { w.add_section("", "y", 1); }, {"must not be empty"});
  expect_error([&] { w.set_meta(nlohmann::json::array()); }, {"must be a JSON object"});
  expect_error([&] { w.write("/nonexistent/dir/c.ff"); }, {"cannot create", "directory exists"});
}

TEST(CheckpointFile, RewriteReplacesAtomically) {
  ff::testing::TempDir dir;
  const std::string p = dir.file("c.ff");
  for (int step = 1; step <= 3; ++step) {
    CheckpointWriter w;
    w.set_meta({{"step", step}});
    w.add_section("s", &step, sizeof(step));
    w.write(p);
  }
  CheckpointReader r(p);
  EXPECT_EQ(r.meta()["step"], 3);
  EXPECT_EQ(*reinterpret_cast<const int*>(r.section("s").data()), 3);
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
}

TEST(CheckpointFile, BinaryMetaStringIsRefusedClearly) {
  ff::testing::TempDir dir;
  CheckpointWriter w;
  w.set_meta({{"blob", std::string("\xff\xfe")}});
  expect_error([&] { w.write(dir.file("c.ff")); }, {"meta cannot be serialized", "as a section"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("c.ff")));
}
