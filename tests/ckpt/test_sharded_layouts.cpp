// Resharding: a checkpoint saved under one layout and rank count loads bit for bit under every
// other, reading only the blocks it needs and staging through a bounded, ledger-tracked buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/memory.h"
#include "io_test_util.h"
#include "sharded_test_model.h"

using namespace ff;
using namespace ff::testing;

namespace {

struct Config {
  Layout layout;
  int ranks;
};

// Every layout at the rank counts it supports (ZeRO of tp 2 needs an even count).
std::vector<Config> all_configs() {
  std::vector<Config> out;
  for (Layout l : {Layout::whole, Layout::tp_rows, Layout::tp_cols, Layout::zero, Layout::zero_of_tp})
    for (int n : {1, 2, 3, 4})
      if (l != Layout::zero_of_tp || n % 2 == 0) out.push_back({l, n});
  return out;
}

std::string name(const Config& c) {
  return std::string(layout_name(c.layout)) + " on " + std::to_string(c.ranks) + " ranks";
}

std::vector<std::vector<bool>> none_seen() {
  std::vector<std::vector<bool>> seen;
  for (const auto& t : synth_tensors()) seen.emplace_back(size_t(numel_of(t)), false);
  return seen;
}

// Loads cfg's every rank from step_dir; every element of the model must have been checked.
void load_all_ranks(const std::string& step_dir, const Config& cfg, ReadOptions ropt = {}) {
  SCOPED_TRACE("loaded as " + name(cfg));
  auto seen = none_seen();
  for (int r = 0; r < cfg.ranks; ++r) {
    ShardedCheckpointReader reader(step_dir, ropt);  // each rank has its own reader
    load_and_check(reader, cfg.layout, r, cfg.ranks, &seen);
  }
  for (size_t t = 0; t < seen.size(); ++t)
    EXPECT_EQ(std::count(seen[t].begin(), seen[t].end(), false), 0) << synth_tensors()[t].name;
}

// Tiny blocks (16 floats, not a multiple of a 6-float row) and a 3-block staging window make
// blocks and windows cut rows and pieces everywhere; the defaults put each piece in one block.
const ShardWriterOptions kSmallBlocks{64};
const ReadOptions kSmallStaging{192};

}  // namespace

TEST(ShardedCheckpointLayouts, TwoToFourFourToTwoFourToOne) {
  TempDir dir;
  const std::string zero2 = save_synth(dir.file("a"), 3, Layout::zero, 2, kSmallBlocks);
  load_all_ranks(zero2, {Layout::zero_of_tp, 4}, kSmallStaging);  // ZeRO 2 -> tp 2 x dp 2
  load_all_ranks(zero2, {Layout::tp_cols, 4}, kSmallStaging);
  const std::string tpdp4 = save_synth(dir.file("b"), 3, Layout::zero_of_tp, 4, kSmallBlocks);
  load_all_ranks(tpdp4, {Layout::zero, 2}, kSmallStaging);
  load_all_ranks(tpdp4, {Layout::tp_rows, 2}, kSmallStaging);
  load_all_ranks(tpdp4, {Layout::whole, 1}, kSmallStaging);
}

TEST(ShardedCheckpointLayouts, EveryLayoutLoadsUnderEveryOther) {
  TempDir dir;
  const auto configs = all_configs();
  ASSERT_EQ(configs.size(), 18u);
  int pairs = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    SCOPED_TRACE("saved as " + name(configs[i]));
    for (const auto& [wopt, ropt] : {std::pair{kSmallBlocks, kSmallStaging},
                                     std::pair{ShardWriterOptions{}, ReadOptions{}}}) {
      const std::string step = save_synth(dir.file("run" + std::to_string(i)), 1, configs[i].layout,
                                          configs[i].ranks, wopt);
      for (const auto& to : configs) {
        load_all_ranks(step, to, ropt);
        ++pairs;
      }
    }
  }
  EXPECT_EQ(pairs, 18 * 18 * 2);
}

TEST(ShardedCheckpointLayouts, ManifestHoldsEveryPieceOnce) {
  TempDir dir;
  const std::string step = save_synth(dir.file("run"), 7, Layout::zero_of_tp, 4);
  const Manifest m = read_manifest(step);
  EXPECT_EQ(m.info.step, 7);
  EXPECT_EQ(m.info.layout["ranks"], 4);
  EXPECT_EQ(m.info.state["data_position"]["cursor"], 56);
  ASSERT_EQ(m.files.size(), 4u);
  int64_t elements = 0, model = 0;
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(m.files[r].file, shard_file_name(int(r)));
    EXPECT_EQ(m.files[r].bytes, std::filesystem::file_size(std::filesystem::path(step) / m.files[r].file));
    for (const auto& p : m.files[r].pieces) {
      elements += p.box.numel();
      EXPECT_EQ(p.offset % 64, 0u);
      EXPECT_EQ(p.dtype, p.tensor == "head_bf16" ? DType::bf16 : DType::f32);
    }
  }
  for (const auto& t : synth_tensors()) model += numel_of(t);
  EXPECT_EQ(elements, model);  // replicas saved once: no more, no less
  ShardedCheckpointReader reader(step);
  EXPECT_EQ(reader.tensor_names().size(), synth_tensors().size());
  EXPECT_EQ(reader.tensor("layer.w2").shape, (std::vector<int64_t>{6, 9}));
  EXPECT_EQ(reader.tensor("head_bf16").dtype, DType::bf16);
}

// A tp block loaded into a wider buffer (row stride > block width), as into a padded layout.
TEST(ShardedCheckpointLayouts, RowStrideDestination) {
  TempDir dir;
  const std::string step = save_synth(dir.file("run"), 1, Layout::zero, 3, kSmallBlocks);
  ShardedCheckpointReader reader(step, kSmallStaging);
  const Box box{2, 8, 1, 5};  // of layer.w1 (9, 6)
  const int64_t stride = 7;
  std::vector<float> dst(size_t(box.rows() * stride), -1.0f);
  reader.read({{"layer.w1", box, TypedPtr(dst.data()), stride}});
  for (int64_t r = 0; r < box.rows(); ++r)
    for (int64_t c = 0; c < stride; ++c) {
      float want = -1.0f;
      auto* bytes = reinterpret_cast<unsigned char*>(&want);
      if (c < box.cols()) synth_element(3, (box.r0 + r) * 6 + box.c0 + c, bytes);
      EXPECT_EQ(std::memcmp(&dst[size_t(r * stride + c)], &want, 4), 0) << r << "," << c;
    }
}

// Reads only what is needed: one tp block from a checkpoint of whole tensors reads the blocks
// holding that block's rows (plus each opened file's 64-byte header), never the whole file.
TEST(ShardedCheckpointLayouts, ReadsOnlyTheBlocksItNeeds) {
  TempDir dir;
  const std::string step = save_synth(dir.file("run"), 1, Layout::whole, 1, kSmallBlocks);
  ShardedCheckpointReader reader(step, kSmallStaging);
  // layer.w1 is (9, 6) f32 = 216 bytes = blocks of 64; rows [5, 9) are bytes [120, 216): blocks 1..3.
  std::vector<float> dst(24);
  reader.read({{"layer.w1", {5, 9, 0, 6}, TypedPtr(dst.data()), 0}});
  EXPECT_EQ(reader.stats().files_opened, 1);
  EXPECT_EQ(reader.stats().bytes_read, 64u + (216u - 64u));
  EXPECT_EQ(reader.stats().blocks_verified, 3u);
  const uint64_t file_bytes = std::filesystem::file_size(std::filesystem::path(step) / shard_file_name(0));
  EXPECT_LT(reader.stats().bytes_read, file_bytes / 4);
}

// Under ZeRO on 4 ranks, a tp row block intersects pieces in some files only: only those files
// are opened, and no more than the intersecting pieces' bytes are read.
TEST(ShardedCheckpointLayouts, ReadsNoMoreThanTheIntersectingPieces) {
  TempDir dir;
  const std::string step = save_synth(dir.file("run"), 1, Layout::zero, 4, kSmallBlocks);
  const Manifest m = read_manifest(step);
  const Box want{0, 3, 0, 6};  // rows [0, 3) of embed (10, 6): the first 18 of 60 elements
  uint64_t piece_bytes = 0;
  std::set<std::string> files;
  for (const auto& f : m.files)
    for (const auto& p : f.pieces)
      if (p.tensor == "embed" && !intersect(p.box, want).empty()) {
        piece_bytes += p.bytes;
        files.insert(f.file);
      }
  // The model has 60+36+6+54+54+7+42 = 259 elements, so rank 0's chunk holds embed whole.
  ASSERT_EQ(files, (std::set<std::string>{shard_file_name(0)}));
  ShardedCheckpointReader reader(step, kSmallStaging);
  std::vector<float> dst(18);
  reader.read({{"embed", want, TypedPtr(dst.data()), 0}});
  EXPECT_EQ(reader.stats().files_opened, 1);
  EXPECT_LE(reader.stats().bytes_read, 64 + piece_bytes);
  EXPECT_EQ(reader.stats().bytes_read, 64u + 128u);  // 72 bytes wanted -> blocks 0 and 1

  // A region spanning ranks 1 and 2 (layer.w1 starts at element 102 of the flat layout: ranks
  // hold [0, 65), [65, 130), [130, 195), [195, 259)) opens exactly their files.
  ShardedCheckpointReader reader2(step, kSmallStaging);
  std::vector<float> w1(54);
  reader2.read({{"layer.w1", {0, 9, 0, 6}, TypedPtr(w1.data()), 0}});
  EXPECT_EQ(reader2.stats().files_opened, 2);
}

// The ledger sees the staging buffer, and it stays at the stated bound (staging_bytes) while a
// tensor 16 times larger loads.
TEST(ShardedCheckpointLayouts, StagingIsBoundedAndOnTheLedger) {
  TempDir dir;
  const std::vector<int64_t> shape{256, 64};  // 64 KiB of f32
  std::vector<float> src(256 * 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) * 0.5f - 7.0f;
  const std::string step = prepare_step_dir(dir.file("run"), 2);
  ShardWriter w(0, 2, {1024});
  w.add("big", shape, full_box(shape), ConstTypedPtr(src.data()));
  write_manifest(step, {2, {}, {}, {}}, {w.write(step)});

  ShardedCheckpointReader reader(step, {4096});
  std::vector<float> dst(src.size());
  auto& ledger = MemoryLedger::instance();
  const int64_t before = ledger.snapshot().current[int(MemCategory::workspace)];
  ledger.reset_peaks();
  reader.read({{"big", full_box(shape), TypedPtr(dst.data()), 0}});
  const auto snap = ledger.snapshot();
  EXPECT_EQ(snap.peak[int(MemCategory::workspace)] - before, 4096);
  EXPECT_EQ(snap.current[int(MemCategory::workspace)], before);
  EXPECT_EQ(reader.stats().staging_bytes, 4096u);
  EXPECT_EQ(reader.stats().blocks_verified, 64u);
  EXPECT_EQ(dst, src);
}

// A narrow column block of a row-major piece (tp columns from a save of whole rows) reads, row
// by row, only the blocks its columns fall in: here one 64-byte block of each 256-byte row.
TEST(ShardedCheckpointLayouts, ColumnBlockReadsOnlyTheBlocksOfItsColumns) {
  TempDir dir;
  const std::vector<int64_t> shape{256, 64};
  std::vector<float> src(256 * 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) * 0.25f + 1.0f;
  const std::string step = prepare_step_dir(dir.file("run"), 2);
  ShardWriter w(0, 2, {64});
  w.add("big", shape, full_box(shape), ConstTypedPtr(src.data()));
  write_manifest(step, {2, {}, {}, {}}, {w.write(step)});

  ShardedCheckpointReader reader(step, {1024});
  const Box cols{0, 256, 4, 12};  // bytes [16, 48) of every row: inside the row's first block
  std::vector<float> dst(256 * 8);
  reader.read({{"big", cols, TypedPtr(dst.data()), 0}});
  EXPECT_EQ(reader.stats().bytes_read, 64u + 256u * 64u);  // a quarter of the 64 KiB piece
  EXPECT_EQ(reader.stats().blocks_verified, 256u);
  for (int64_t r = 0; r < 256; ++r)
    for (int64_t c = 0; c < 8; ++c)
      ASSERT_EQ(dst[size_t(r * 8 + c)], src[size_t(r * 64 + 4 + c)]) << r << "," << c;
}
