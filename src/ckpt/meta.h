#pragma once
// What a sharded training checkpoint says about itself, beyond its tensors: the model, the step,
// the data position (with the seed, the whole RNG state: the data order and the initializer are
// counter-based), the resolved config and the tokenizer's checksum. The learning-rate schedule is
// a function of the step and the config, so the step is its whole state.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/checkpoint_state.h"
#include "ckpt/sharded_manifest.h"

namespace ff {

// The manifest fields of a save: config = the model, state = the rest (checkpoint_state_from_meta
// reads them back with the same checks as the old format's meta). layout: the saving mesh.
CheckpointInfo checkpoint_info(const CheckpointState& s, const nlohmann::json& layout);
// Validates every field as if a user had typed it; throws naming the folder and the field.
CheckpointState checkpoint_state_from_info(const CheckpointInfo& info, const std::string& step_dir);

struct CheckpointMeta {
  std::string dir;  // run_dir/step_N
  CheckpointState state;
  nlohmann::json layout;  // the mesh it was saved under (dp, tp, pp, cp, zero, ranks)
  std::vector<std::string> skipped;  // newer step folders passed over, each with why
};

// The newest complete checkpoint of a run folder (`latest`, else the newest complete step_N), its
// manifest read and checked, no tensor read; nullopt when the folder holds none. With below, only
// steps < below count (the fallback after step below proved damaged). Throws when the folder
// holds only an old single-file checkpoint (refused with what to do).
std::optional<CheckpointMeta> read_latest_checkpoint_meta(const std::string& run_dir,
                                                          std::optional<int64_t> below = {});

// Throws when run_dir holds no complete checkpoint but a damaged one (a step folder with a
// manifest): a fresh start would delete it at its first save. Names each and the fix.
void refuse_only_damaged_checkpoints(const std::string& run_dir);

// For sample, eval and export: a run folder (its latest complete checkpoint) or a step_N folder.
// Throws naming the folder and the fix when there is none.
CheckpointMeta checkpoint_meta_in(const std::string& run_or_step_dir);

}  // namespace ff
