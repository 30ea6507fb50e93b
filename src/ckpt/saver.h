#pragma once
// The trainer's half of a sharded save (sharded.h has the format): every rank writes its own
// pieces to its own data file, then rank 0 gathers every rank's record, writes the manifest and
// moves `latest` (keeping the newest keep_checkpoints). Nothing is gathered but the
// records' text, so a save costs each rank only its share of the state.
//
// Asynchronous (ckpt_async): the pieces are first copied into one ledger-tracked staging buffer,
// and a background thread writes the data file while training goes on. MPI stays on the training
// thread: the next save, or finish() at the end of the run, waits for the thread and then
// publishes. A failed write on any rank fails every rank's next save/finish with its message.
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ckpt/checkpoint_state.h"
#include "ckpt/sharded.h"
#include "ckpt/state_pieces.h"
#include "core/memory.h"

namespace ff {

class Comm;

// Rank 0's run folder, on every rank of world: each rank writes its own data file into the run
// folder, so all must name the same one (the folder must be on a filesystem every rank sees).
std::string leader_run_dir(const Comm& world, const std::string& mine);

class CheckpointSaver {
 public:
  // world: every rank of the job (null: one process). keep >= 1.
  CheckpointSaver(std::string run_dir, const Comm* world, int keep, bool async);
  // Waits for a background write without publishing it (an exception is unwinding the trainer).
  ~CheckpointSaver();
  CheckpointSaver(const CheckpointSaver&) = delete;
  CheckpointSaver& operator=(const CheckpointSaver&) = delete;

  // Collective: saves step info.step from this rank's pieces (synchronously, or started in the
  // background; the pieces' data may change as soon as it returns).
  void save(const CheckpointInfo& info, const std::vector<SavePiece>& pieces);
  // Collective: completes a pending background save. Throws on every rank if any rank's failed.
  void finish();
  // Test-only: runs on the background thread before it writes (an exception there is a failed
  // write), so a test can fail a write that a real disk fails rarely.
  std::function<void(const std::string& step_dir)> before_background_write;
  // Seconds the last save() kept training waiting (the whole write, or the copy when async).
  double last_stall_seconds() const { return stall_s_; }

 private:
  void join();
  // Collective: agrees on failure, gathers the records, writes the manifest and publishes.
  void publish();

  std::string run_dir_;
  const Comm* world_;
  int keep_;
  bool async_;
  std::thread thread_;
  bool pending_ = false;
  CheckpointInfo info_;  // of the pending save
  ShardFileRecord record_;
  std::string error_;  // the background write's failure, "" when none
  TrackedBuffer<float> staging_;
  double stall_s_ = 0;
};

// The layout field of a checkpoint one process wrote (ranks 1, every degree 1).
nlohmann::json serial_layout_json();

// One process's whole state saved as step state.step of run_dir, as training saves a serial run
// (import writes its step-0 checkpoint so): params, m and v each hold the model's whole flat
// layout, and are only read.
void save_serial_checkpoint(const std::string& run_dir, const CheckpointState& state, const float* params,
                            const float* m, const float* v);

}  // namespace ff
