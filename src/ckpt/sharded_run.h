#pragma once
// The run folder's checkpoints: step_N/ folders, the `latest` pointer and how many are kept.
// A save goes: one rank calls prepare_step_dir; every rank writes its data file (ShardWriter);
// one rank gathers the records and calls write_manifest, then publish_checkpoint. A crash at any
// point leaves the previous complete checkpoint as what find_latest_complete returns.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ff {

std::string step_dir_path(const std::string& run_dir, int64_t step);  // run_dir/step_N

// One rank, before any rank writes its data file (the caller then barriers). Creates step_N/;
// if an earlier attempt left one (the run resumed from an earlier step after that checkpoint
// proved damaged), its manifest goes first, so it is never taken for complete while rewritten.
std::string prepare_step_dir(const std::string& run_dir, int64_t step);

// Why step_dir is not a complete checkpoint, or "" when it is: the manifest verifies and names
// this step, and every data file it lists exists at the recorded size with a matching header.
// Reads the manifest and 64 bytes per data file, never the data (a damaged block is found when
// it is read).
std::string incomplete_reason(const std::string& step_dir);

// After write_manifest: renames run_dir/latest into place naming step_N, then deletes every other
// step folder except the keep - 1 newest complete ones below N. Folders above N are deleted too:
// they belong to a future the run abandoned by resuming from an earlier step. Returns the paths
// it deleted. Throws, leaving everything as it was, when step_N is not complete.
std::vector<std::string> publish_checkpoint(const std::string& run_dir, int64_t step, int keep = 2);

struct CompleteCheckpoint {
  std::string dir;
  int64_t step = 0;
  std::vector<std::string> skipped;  // "step_15: <reason>" for each newer folder passed over
};

// The checkpoint to resume from: the one `latest` names if it is complete, else the newest
// complete step folder. With below, only steps < below count (after loading step B failed, pass
// below = B for the previous one). nullopt when there is none; throws when there is none but the
// folder holds an old single-file checkpoint, which starting afresh would silently discard.
std::optional<CompleteCheckpoint> find_latest_complete(const std::string& run_dir,
                                                       std::optional<int64_t> below = {});

// The step folders above step `above` that hold a manifest, newest first. Above the checkpoint a
// run resumes from (or above -1 when it found none), each was complete once and has been damaged
// since; a folder without a manifest is a save that did not finish, which the next save removes.
std::vector<std::string> damaged_step_dirs(const std::string& run_dir, int64_t above);

// After resuming from resumed_step: renames each of damaged_step_dirs(run_dir, resumed_step)
// step_N.damaged, where no later save or keep-K deletes it and no scan takes it for a checkpoint.
// Returns the new paths.
std::vector<std::string> set_aside_damaged(const std::string& run_dir, int64_t resumed_step);

}  // namespace ff
