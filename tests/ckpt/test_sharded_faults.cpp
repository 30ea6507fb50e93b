// A checkpoint is either complete or ignored, damage is refused naming the file, bad saves and
// bad requests are refused naming the tensor, and the run folder keeps the last K.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "io_test_util.h"
#include "rewrite_manifest.h"
#include "sharded_test_model.h"

using namespace ff;
using namespace ff::testing;
namespace fs = std::filesystem;

namespace {

// Every rank writes its data file for step; the manifest is not written.
std::vector<ShardFileRecord> write_data_only(const std::string& run, int64_t step, int ranks) {
  const std::string dir = prepare_step_dir(run, step);
  std::vector<ShardFileRecord> recs;
  std::vector<std::vector<unsigned char>> staged;
  for (int r = 0; r < ranks; ++r) {
    ShardWriter w(r, step);
    for (const Holding& h : holdings(Layout::zero, r, ranks)) {
      const SynthTensor& t = synth_tensors()[h.tensor];
      staged.push_back(holding_bytes(h));
      w.add_flat(t.name, t.shape, h.box, h.begin, h.end, ConstTypedPtr(staged.back().data(), t.dtype));
    }
    recs.push_back(w.write(dir));
  }
  return recs;
}

std::string latest_of(const std::string& run) { return read_all((fs::path(run) / "latest").string()); }

// Loads the whole model as one rank.
void load_everything(const std::string& step_dir) {
  ShardedCheckpointReader reader(step_dir);
  load_and_check(reader, Layout::whole, 0, 1);
}

}  // namespace

TEST(ShardedCheckpointFaults, FolderWithoutManifestIsIgnored) {
  TempDir dir;
  const std::string run = dir.file("run");
  save_synth(run, 5, Layout::zero, 2);
  auto recs = write_data_only(run, 10, 2);  // a save killed before its manifest
  EXPECT_EQ(latest_of(run), "step_5\n");
  auto found = find_latest_complete(run);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->step, 5);
  EXPECT_EQ(found->dir, step_dir_path(run, 5));
  // Without `latest` (killed between manifest and pointer) the scan reports what it skipped.
  fs::remove(fs::path(run) / "latest");
  found = find_latest_complete(run);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->step, 5);
  ASSERT_EQ(found->skipped.size(), 1u);
  EXPECT_NE(found->skipped[0].find("step_10: no manifest.json"), std::string::npos) << found->skipped[0];
  expect_error([&] { ShardedCheckpointReader r(step_dir_path(run, 10)); },
               {"checkpoint manifest", "manifest.json: file not found", "did not finish",
                "the previous complete one"});

  // The manifest makes it complete, but `latest` moves only when published.
  CheckpointInfo info;
  info.step = 10;
  write_manifest(step_dir_path(run, 10), info, recs);
  EXPECT_FALSE(fs::exists(fs::path(run) / "latest"));
  EXPECT_EQ(incomplete_reason(step_dir_path(run, 10)), "");
  publish_checkpoint(run, 10);
  EXPECT_EQ(latest_of(run), "step_10\n");
  EXPECT_EQ(find_latest_complete(run)->step, 10);
  EXPECT_EQ(find_latest_complete(run, 10)->step, 5);  // the fallback after step 10 fails to load
  EXPECT_FALSE(find_latest_complete(run, 5));
  EXPECT_FALSE(find_latest_complete(dir.file("no_such_run")));
}

TEST(ShardedCheckpointFaults, MissingOrTruncatedDataFileIsIncomplete) {
  TempDir dir;
  const std::string run = dir.file("run");
  save_synth(run, 5, Layout::zero, 3);
  const std::string s10 = save_synth(run, 10, Layout::zero, 3);
  const std::string f1 = (fs::path(s10) / shard_file_name(1)).string();
  const auto size = fs::file_size(f1);

  truncate_to(f1, size - 1);
  auto found = find_latest_complete(run);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->step, 5);
  ASSERT_EQ(found->skipped.size(), 1u);
  EXPECT_NE(found->skipped[0].find("rank_00001.bin has " + std::to_string(size - 1) + " bytes"),
            std::string::npos) << found->skipped[0];
  EXPECT_NE(found->skipped[0].find("(truncated)"), std::string::npos);
  expect_error([&] { load_everything(s10); },
               {"checkpoint data file " + f1, "truncated", "the manifest records " + std::to_string(size),
                "previous complete checkpoint"});

  fs::remove(f1);
  found = find_latest_complete(run);
  EXPECT_EQ(found->step, 5);
  EXPECT_EQ(found->skipped.at(0), "step_10 (named by latest): rank_00001.bin is missing");
  expect_error([&] { load_everything(s10); }, {f1, "file not found", "incomplete"});
  // A file from another save (same rank, other step) is caught by its header.
  fs::copy_file(fs::path(step_dir_path(run, 5)) / shard_file_name(1), f1);
  const std::string why = incomplete_reason(s10);
  EXPECT_NE(why.find("at step 5, the manifest expects rank 1 at step 10"), std::string::npos) << why;
}

TEST(ShardedCheckpointFaults, FlippedByteInEachDataFileIsRefusedNamingIt) {
  TempDir dir;
  const std::string run = dir.file("run");
  const std::string step = save_synth(run, 4, Layout::zero, 3);
  const Manifest m = read_manifest(step);
  for (const auto& f : m.files) {
    const std::string path = (fs::path(step) / f.file).string();
    const auto& p = f.pieces.back();
    const std::string clean = read_all(path);
    flip_byte(path, p.offset + p.bytes - 1);
    EXPECT_EQ(incomplete_reason(step), "");  // structure intact: damage shows when the data is read
    EXPECT_THROW(load_everything(step), CheckpointDamaged);  // which resuming falls back from
    expect_error([&] { load_everything(step); },
                 {"checkpoint data file " + path, "checksum mismatch", "\"" + p.tensor + "\"",
                  "previous complete checkpoint"});
    // A reader that needs none of that file's pieces still loads.
    ShardedCheckpointReader other(step);
    std::vector<unsigned char> dst(dtype_size(m.files[0].pieces[0].dtype));
    const auto& q = (f.rank == 0 ? m.files[1] : m.files[0]).pieces[0];
    const Box one{q.box.r0, q.box.r0 + 1, q.box.c0, q.box.c0 + 1};
    other.read({{q.tensor, one, TypedPtr(dst.data(), q.dtype), 0}});
    EXPECT_EQ(other.stats().files_opened, 1);
    write_all(path, clean);
    flip_byte(path, 20);  // the header
    EXPECT_NE(incomplete_reason(step).find(f.file + ": damaged header"), std::string::npos);
    write_all(path, clean);
  }
  load_everything(step);  // restored: loads again
}

TEST(ShardedCheckpointFaults, FlippedManifestByteIsRefusedNamingIt) {
  TempDir dir;
  const std::string run = dir.file("run");
  save_synth(run, 2, Layout::tp_rows, 2);
  const std::string step = save_synth(run, 4, Layout::tp_rows, 2);
  const std::string path = (fs::path(step) / kManifestName).string();
  const std::string clean = read_all(path);
  // A digit inside the body (the JSON still parses), the checksum field, and the frame.
  const size_t digit = clean.find("\"offset\":") + 9;
  for (size_t at : {digit, size_t(20), size_t(3)}) {
    flip_byte(path, at);
    expect_error([&] { ShardedCheckpointReader r(step); },
                 {"checkpoint manifest " + path, "damaged", "previous complete checkpoint"});
    auto found = find_latest_complete(run);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->step, 2);
    EXPECT_NE(found->skipped.at(0).find("step_4 (named by latest)"), std::string::npos);
    write_all(path, clean);
  }
  EXPECT_EQ(find_latest_complete(run)->step, 4);
}

TEST(ShardedCheckpointFaults, KeepsTheLastKAndDeletesOnlyAfterTheNewOneIsComplete) {
  TempDir dir;
  const std::string run = dir.file("run");
  save_synth(run, 5, Layout::zero, 2);
  save_synth(run, 10, Layout::zero, 2);
  EXPECT_TRUE(fs::exists(step_dir_path(run, 5)));
  write_data_only(run, 15, 2);  // killed before its manifest: nothing is deleted
  EXPECT_THROW(publish_checkpoint(run, 15), std::runtime_error);
  EXPECT_TRUE(fs::exists(step_dir_path(run, 5)));
  EXPECT_EQ(latest_of(run), "step_10\n");
  save_synth(run, 15, Layout::zero, 2);  // the retry completes; only 10 and 15 remain
  EXPECT_FALSE(fs::exists(step_dir_path(run, 5)));
  EXPECT_TRUE(fs::exists(step_dir_path(run, 10)));
  EXPECT_TRUE(fs::exists(step_dir_path(run, 15)));
  save_synth(run, 20, Layout::zero, 2, {}, 3);
  save_synth(run, 25, Layout::zero, 2, {}, 3);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(run)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"latest", "step_15", "step_20", "step_25"}));
  // A run resumed from step 15 (20 and 25 proved damaged) drops that abandoned future when it
  // saves step 20 again, and an incomplete folder below is garbage too.
  write_data_only(run, 12, 2);
  save_synth(run, 20, Layout::zero, 2, {}, 2);
  left.clear();
  for (const auto& e : fs::directory_iterator(run)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"latest", "step_15", "step_20"}));
  EXPECT_THROW(publish_checkpoint(run, 20, 0), std::invalid_argument);
}

TEST(ShardedCheckpointFaults, OldSingleFileFormatIsRefused) {
  TempDir dir;
  // The old format's magic and version 1, all of such a file that the refusal reads.
  write_all(dir.file("checkpoint.bin"), std::string("FFCHKPNT\x01\0\0\0", 12));
  EXPECT_TRUE(is_single_file_checkpoint(dir.file("checkpoint.bin")));
  EXPECT_FALSE(is_single_file_checkpoint(dir.file("nothing.bin")));
  for (const std::string& p : {dir.path().string(), dir.file("checkpoint.bin")}) {
    expect_error([&] { refuse_single_file_checkpoint(p); },
                 {dir.file("checkpoint.bin"), "old single-file format (FFCHKPNT)", "start a new run"});
    expect_error([&] { ShardedCheckpointReader r(p); }, {"old single-file format"});
  }
  refuse_single_file_checkpoint(dir.file("elsewhere"));  // nothing there: quiet
  // A run folder holding only the old format is refused rather than silently started afresh.
  expect_error([&] { find_latest_complete(dir.path().string()); }, {"old single-file format"});
}

TEST(ShardedCheckpointFaults, AnotherModelsConfigIsDescribed) {
  const nlohmann::json saved = {{"dim", 1024}, {"layers", 8}, {"vocab", 32000}, {"rope", {{"theta", 1e4}}}};
  const nlohmann::json mine = {{"dim", 512}, {"layers", 8}, {"heads", 4}, {"rope", {{"theta", 5e5}}}};
  EXPECT_EQ(describe_config_difference(saved, saved), "");
  EXPECT_EQ(describe_config_difference(saved, mine),
            "dim: 1024 in the checkpoint, 512 in this run\n"
            "rope.theta: 10000.0 in the checkpoint, 500000.0 in this run\n"
            "vocab: 32000 in the checkpoint, absent in this run\n"
            "heads: absent in the checkpoint, 4 in this run");
  EXPECT_EQ(describe_config_difference(saved, mine, 2),
            "dim: 1024 in the checkpoint, 512 in this run\n"
            "rope.theta: 10000.0 in the checkpoint, 500000.0 in this run\n... and 2 more");
  expect_error([&] { require_same_config("run/step_5", saved, mine); },
               {"checkpoint run/step_5 was saved by a different model", "dim: 1024", "point the run"});
  require_same_config("run/step_5", saved, saved);
}

TEST(ShardedCheckpointFaults, OverlappingOrMissingPiecesAreRefusedOnSave) {
  TempDir dir;
  const std::string step = prepare_step_dir(dir.file("run"), 1);
  std::vector<float> a(24, 1.0f), b(24, 2.0f);
  const std::vector<int64_t> shape{6, 6};
  ShardWriter w0(0, 1), w1(1, 1);
  w0.add("wq", shape, {0, 4, 0, 6}, ConstTypedPtr(a.data()));  // rows [0, 4)
  w1.add("wq", shape, {2, 6, 0, 6}, ConstTypedPtr(b.data()));  // rows [2, 6): overlaps 2 and 3
  std::vector<ShardFileRecord> recs = {w0.write(step), w1.write(step)};
  expect_error([&] { write_manifest(step, {}, recs); },
               {"piece rows [2, 6) x cols [0, 6) of \"wq\" in rank_00001.bin overlaps",
                "rows [0, 4) x cols [0, 6) of \"wq\" in rank_00000.bin", "save one replica"});
  EXPECT_FALSE(fs::exists(fs::path(step) / kManifestName));
  expect_error([&] { write_manifest(step, {}, {recs[0]}); },
               {"tensor \"wq\" is covered by 24 of its 36 elements",
                "(rows [4, 6) x cols [0, 6) is missing)", "some rank did not add"});
  expect_error([&] { write_manifest(step, {}, {recs[0], recs[0]}); }, {"rank 0 is listed twice"});
  ShardWriter w2(1, 1);
  w2.add("wq", {6, 7}, {4, 6, 0, 6}, ConstTypedPtr(b.data()));
  expect_error([&] { write_manifest(step, {}, {recs[0], w2.write(step)}); }, {"disagrees", "shape or dtype"});
  EXPECT_THROW(w0.add("wq", shape, {0, 7, 0, 6}, ConstTypedPtr(a.data())), std::invalid_argument);
}

TEST(ShardedCheckpointFaults, BadRequestsNameTheTensorAndRegion) {
  TempDir dir;
  const std::string step = save_synth(dir.file("run"), 1, Layout::tp_rows, 2);
  ShardedCheckpointReader reader(step);
  std::vector<float> f(64);
  std::vector<uint16_t> h(64);
  expect_error([&] { reader.read({{"layer.wk", {0, 1, 0, 1}, TypedPtr(f.data()), 0}}); },
               {"no tensor \"layer.wk\"", "embed, final_norm, head_bf16", "different model"});
  expect_error([&] { reader.read({{"head_bf16", {0, 1, 0, 6}, TypedPtr(f.data()), 0}}); },
               {"the destination is f32 but the checkpoint holds bf16"});
  reader.read({{"head_bf16", {0, 1, 0, 6}, TypedPtr(h.data(), DType::bf16), 0}});
  expect_error([&] { reader.read({{"layer.w2", {0, 7, 0, 9}, TypedPtr(f.data()), 0}}); },
               {"rows [0, 7) x cols [0, 9) of \"layer.w2\"", "lies outside the tensor",
                "rows [0, 6) x cols [0, 9)"});

  // A manifest missing a piece (written by other code, checksum valid): the hole is named.
  rewrite_manifest(step, [](nlohmann::json& body) {
    auto& pieces = body["files"][1]["pieces"];
    for (size_t i = 0; i < pieces.size(); ++i)
      if (pieces[i]["tensor"] == "layer.w1") pieces.erase(i);  // rank 1's rows [5, 9)
  });
  ShardedCheckpointReader holed(step);
  expect_error([&] { holed.read({{"layer.w1", {3, 9, 2, 4}, TypedPtr(f.data()), 0}}); },
               {"no piece covers rows [5, 9) x cols [2, 4) of tensor \"layer.w1\"", "damaged"});
  // A piece pointing past its file is refused when the manifest is read, before any pread.
  rewrite_manifest(step, [](nlohmann::json& body) { body["files"][0]["pieces"][0]["offset"] = 1 << 20; });
  expect_error([&] { ShardedCheckpointReader r(step); },
               {"manifest.json: malformed", "of \"embed\" in rank_00000.bin lies outside its data file"});
}

// An asynchronous save hands the writer staged copies and calls write() on another thread: the
// file and record equal a synchronous write's.
TEST(ShardedCheckpointFaults, WriteFromABackgroundThread) {
  TempDir dir;
  const std::vector<int64_t> shape{5, 8};
  std::vector<float> staged(40);
  for (size_t i = 0; i < staged.size(); ++i) staged[i] = float(i) - 11.5f;
  const std::string a = prepare_step_dir(dir.file("sync"), 3), b = prepare_step_dir(dir.file("async"), 3);
  ShardWriter w(0, 3, {64});
  w.add_flat("w", shape, full_box(shape), 0, 40, ConstTypedPtr(staged.data()));
  const ShardFileRecord sync = w.write(a);
  ShardFileRecord async;
  std::thread t([&] { async = w.write(b); });
  t.join();
  EXPECT_EQ(encode_shard_record(async), encode_shard_record(sync));
  EXPECT_EQ(read_all((fs::path(a) / sync.file).string()), read_all((fs::path(b) / async.file).string()));
  EXPECT_EQ(sync.pieces.size(), 1u);
  EXPECT_EQ(sync.pieces[0].checksums.size(), 3u);  // 160 bytes in blocks of 64
}
