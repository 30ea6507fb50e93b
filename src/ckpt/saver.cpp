#include "ckpt/saver.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "ckpt/meta.h"
#include "comm/broadcast_text.h"
#include "comm/comm.h"

namespace ff {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ShardFileRecord write_pieces(const std::vector<SavePiece>& pieces, int rank, int64_t step,
                             const std::string& step_dir) {
  ShardWriter w(rank, step);
  for (const SavePiece& p : pieces) w.add_flat(p.tensor, p.shape, p.box, p.begin, p.end, p.data);
  return w.write(step_dir);
}

// Every rank learns whether any rank failed; the failing ranks throw their own message, the
// others one naming the first failed rank, so no rank waits forever in a later collective.
void agree(const Comm* world, const std::string& error, const std::string& what) {
  if (!world) {
    if (!error.empty()) throw std::runtime_error(error);
    return;
  }
  int64_t first_failed = error.empty() ? world->size() : world->rank();
  world->all_reduce(&first_failed, 1, ReduceOp::min);
  if (!error.empty()) throw std::runtime_error(error);
  if (first_failed < world->size())
    throw std::runtime_error(
        fmt::format("{} failed on rank {} (its own message says why); the previous "
                    "complete checkpoint is left as it was",
                    what, first_failed));
}

// Every rank's record on rank 0 (others get an empty list): one all-gather of the padded text.
std::vector<ShardFileRecord> gather_records(const Comm* world, const ShardFileRecord& mine) {
  const std::string text = encode_shard_record(mine);
  if (!world) return {mine};
  const int n = world->size();
  int64_t longest = int64_t(text.size());
  world->all_reduce(&longest, 1, ReduceOp::max);
  std::vector<uint8_t> send(size_t(longest), 0), all(size_t(longest) * n);
  std::memcpy(send.data(), text.data(), text.size());
  std::vector<int64_t> lengths(size_t(n), 0);
  lengths[size_t(world->rank())] = int64_t(text.size());
  world->all_reduce(lengths.data(), lengths.size());
  world->all_gather(send.data(), all.data(), all.size());
  std::vector<ShardFileRecord> out;
  if (world->rank() != 0) return out;
  for (int r = 0; r < n; ++r)
    out.push_back(decode_shard_record(
        std::string(reinterpret_cast<const char*>(all.data()) + size_t(r) * longest, size_t(lengths[r]))));
  return out;
}

}  // namespace

std::string leader_run_dir(const Comm& world, const std::string& mine) { return broadcast_text(world, mine, 0); }

CheckpointSaver::CheckpointSaver(std::string run_dir, const Comm* world, int keep, bool async)
    : run_dir_(std::move(run_dir)), world_(world), keep_(keep), async_(async) {
  if (keep < 1) throw std::invalid_argument("CheckpointSaver: keep_checkpoints must be >= 1");
}

CheckpointSaver::~CheckpointSaver() { join(); }

void CheckpointSaver::join() {
  if (thread_.joinable()) thread_.join();
}

void CheckpointSaver::save(const CheckpointInfo& info, const std::vector<SavePiece>& pieces) {
  const auto t0 = std::chrono::steady_clock::now();
  finish();
  const int rank = world_ ? world_->rank() : 0;
  const std::string step_dir = step_dir_path(run_dir_, info.step);
  std::string error;
  if (rank == 0) {
    try {
      prepare_step_dir(run_dir_, info.step);
    } catch (const std::exception& e) {
      error = fmt::format("checkpoint at step {}: {}", info.step, e.what());
    }
  }
  agree(world_, error, fmt::format("preparing the checkpoint folder {}", step_dir));
  info_ = info;
  if (!async_) {
    try {
      record_ = write_pieces(pieces, rank, info.step, step_dir);
    } catch (const std::exception& e) {
      error_ = fmt::format("rank {} writing its part of checkpoint {}: {}", rank, step_dir, e.what());
    }
    pending_ = true;
    publish();
    stall_s_ = seconds_since(t0);
    return;
  }
  // Copy everything first (training may change it from the next step on), then write the copy.
  size_t total = 0;
  for (const SavePiece& p : pieces) total += size_t(p.end - p.begin);
  if (staging_.size() < total) {
    staging_.release();
    staging_.allocate(total, MemCategory::workspace);
  }
  std::vector<SavePiece> staged = pieces;
  size_t at = 0;
  for (SavePiece& p : staged) {
    const size_t n = size_t(p.end - p.begin);
    std::memcpy(staging_.data() + at, p.data, n * sizeof(float));
    p.data = staging_.data() + at;
    at += n;
  }
  pending_ = true;
  thread_ = std::thread([this, staged = std::move(staged), rank, step = info.step, step_dir] {
    try {
      if (before_background_write) before_background_write(step_dir);
      record_ = write_pieces(staged, rank, step, step_dir);
    } catch (const std::exception& e) {
      error_ = fmt::format("rank {} writing its part of checkpoint {} in the background: {}", rank, step_dir,
                           e.what());
    }
  });
  stall_s_ = seconds_since(t0);
}

void CheckpointSaver::finish() {
  if (!pending_) return;
  join();
  publish();
}

void CheckpointSaver::publish() {
  pending_ = false;
  const std::string error = std::exchange(error_, "");
  const std::string step_dir = step_dir_path(run_dir_, info_.step);
  agree(world_, error, fmt::format("writing checkpoint {}", step_dir));
  std::vector<ShardFileRecord> records = gather_records(world_, record_);
  std::string manifest_error;
  if (!world_ || world_->rank() == 0) {
    try {
      write_manifest(step_dir, info_, std::move(records));
      publish_checkpoint(run_dir_, info_.step, keep_);
    } catch (const std::exception& e) {
      manifest_error = fmt::format("completing checkpoint {}: {}", step_dir, e.what());
    }
  }
  agree(world_, manifest_error, fmt::format("completing checkpoint {}", step_dir));
}

nlohmann::json serial_layout_json() {
  return {{"ranks", 1}, {"dp", 1}, {"cp", 1}, {"tp", 1}, {"pp", 1}, {"zero", 0}};
}

void save_serial_checkpoint(const std::string& run_dir, const CheckpointState& state, const float* params,
                            const float* m, const float* v) {
  const ParamLayout layout(state.model);
  const size_t n = layout.total();
  // StateRun's spans are writable because a load fills them; a save only reads them.
  StateRuns runs;
  runs.params = {{0, n, const_cast<float*>(params)}};
  runs.m = {{0, n, const_cast<float*>(m)}};
  runs.v = {{0, n, const_cast<float*>(v)}};
  CheckpointSaver saver(run_dir, nullptr, 1, false);
  saver.save(checkpoint_info(state, serial_layout_json()), state_save_pieces(layout, runs, {}));
  saver.finish();
}

}  // namespace ff
