#pragma once
// What a training checkpoint records beside its tensors (the step, the data position, the model,
// the config, the tokenizer's checksum) and the checks it is read back with; meta.h puts it in a
// sharded checkpoint's manifest. The data loader's position plus the seed is the whole RNG state
// of training, so resuming continues bit-identically.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/tokens/data_loader.h"
#include "model/model_config.h"

namespace ff {

// Everything fp16's dynamic loss scaler (train/loss_scaler.h) carries from one step to the next:
// a checkpoint saves it so a resumed fp16 run continues the same scale trajectory.
struct LossScaleState {
  float scale = 0;
  int clean_steps = 0;      // clean steps since the last overflow or growth
  int hysteresis_left = 0;  // overflows left before the scale halves (<= 0: every one halves)
};

// One data folder as a run read it: its weight in the mixture and each shard's header checksum
// (which covers the shard's tokens), so a resume can tell the same data under another path from
// other data under the same path.
struct ShardChecksum {
  std::string split;  // "train" or "val"
  std::string file;   // its name inside the folder
  uint64_t checksum = 0;
};
struct DataFolderRecord {
  std::string dir;  // as the config named it then, for messages
  double weight = 1;
  std::vector<ShardChecksum> shards;
};

struct CheckpointState {
  ModelConfig model;
  int step = 0;
  DataLoader::Position data;
  std::string config_toml;  // the resolved config of the run that wrote it, for humans
  uint64_t tokenizer_checksum = 0;  // TextTokenizer::checksum() of the run's tokenizer; 0 = unrecorded
  std::vector<float> router_bias;   // MoE: the selection bias (n_layers x n_experts); empty = zero
  std::optional<LossScaleState> loss_scale;  // fp16's dynamic loss scale; none for other precisions
  // The checkpoint holds parameters and no optimizer state (an imported model): a run starting
  // from it begins at step 0 with a fresh optimizer.
  bool weights_only = false;
  // The learning-rate schedule's length in steps, fixed when the run started (or re-planned by
  // lr_schedule_steps); 0 = unrecorded (older checkpoints: their config's steps).
  int lr_schedule_steps = 0;
  // The data the run trained on, by content; empty = unrecorded (older checkpoints: compared by path).
  std::vector<DataFolderRecord> data_shards;
};

// Bounds a checkpoint's fields must meet on top of ModelConfig::validate: a forged but
// re-checksummed file must not resume at a negative step or allocate for a 2^31-token window.
constexpr int kMaxCheckpointStep = 1'000'000'000;
constexpr int kMaxSeqLen = 1 << 20;
constexpr int kMaxVocab = 1 << 24;
constexpr int kMaxDim = 1 << 16;
constexpr int kMaxLayers = 1 << 12;
// The loader gives each epoch's shuffle a 2^40 counter range of a 64-bit counter (data_loader.cpp).
constexpr uint64_t kMaxDataEpoch = 1ull << 24;

nlohmann::json model_config_to_json(const ModelConfig& c);
// Checks every field's type and range (source names the file in messages), then validate().
ModelConfig model_config_from_json(const nlohmann::json& j, const std::string& source = "checkpoint");
// Names every field that differs, e.g. "dim 64 vs 128"; empty when equal.
std::string describe_model_difference(const ModelConfig& a, const ModelConfig& b);

// Every meta field of an opened checkpoint, validated as if a user had typed it; throws naming
// the file and the field.
CheckpointState checkpoint_state_from_meta(const nlohmann::json& meta, const std::string& path);

}  // namespace ff
