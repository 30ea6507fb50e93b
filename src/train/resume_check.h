#pragma once
// Resuming a run folder with a changed configuration. The checkpoint keeps the resolved config of
// the run that wrote it; the new run's is compared with it key by key. Deliberate changes (the
// learning-rate schedule, the layout over ranks, run control) are accepted and listed; what would
// silently change the data order or the meaning of a step is refused, naming the key: the seed, the
// data (by content where the checkpoint recorded it, else by path), and the global batch micro_batch x grad_accum x dp (its split may change: dp 2 x
// micro_batch 4 reads the same sequences as dp 1 x micro_batch 8). Model keys are the checkpoint's
// model check's (describe_model_difference), not this one's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/train_config.h"

namespace ff {

struct ConfigChange {
  std::string key, before, after;
};

// The accepted changes (empty: none); throws naming every refused key, the values and the fix.
// saved_toml empty (a checkpoint that kept no config): nothing to compare, no changes.
// data_by_contents: the checkpoint recorded its data's checksums, which run_data.h's
// check_resume_data compares, so `data` naming the same shards by another path is a listed change;
// otherwise (an older checkpoint) another path is refused.
std::vector<ConfigChange> check_resume_config(const std::string& saved_toml, const TrainConfig& now,
                                              const std::string& run_dir, bool data_by_contents = false);
// An integer key of a saved config; none when it has no such key (or no config).
std::optional<int64_t> saved_config_integer(const std::string& saved_toml, const std::string& key);
// "lr 0.001 -> 0.002, zero 0 -> 3".
std::string describe_changes(const std::vector<ConfigChange>& changes);

}  // namespace ff
