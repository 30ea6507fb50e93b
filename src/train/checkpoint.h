#pragma once
// Training checkpoints: one file (io/checkpoint_file.h: sections with checksums, written to a
// temp file and renamed), holding the parameters, both AdamW moments, the step and the data
// position. The data loader's position plus the seed is the whole RNG state of training, so
// resuming continues bit-identically.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "io/data_loader.h"
#include "model/model_config.h"

namespace ff {

struct CheckpointState {
  ModelConfig model;
  int step = 0;
  DataLoader::Position data;
  std::string config_toml;  // the resolved config of the run that wrote it, for humans
};

nlohmann::json model_config_to_json(const ModelConfig& c);
ModelConfig model_config_from_json(const nlohmann::json& j);
// Names every field that differs, e.g. "dim 64 vs 128"; empty when equal.
std::string describe_model_difference(const ModelConfig& a, const ModelConfig& b);

// The checkpoint file of a run folder (or the file itself when given one); throws if absent.
std::string checkpoint_path_in(const std::string& dir_or_file);
std::string checkpoint_file_name();  // "checkpoint.bin"

void save_checkpoint(const std::string& path, const CheckpointState& state, const float* params,
                     const float* adam_m, const float* adam_v, size_t n);

// Opens and verifies the file (checksums, format), returns its state; copies the tensors into
// the buffers that are non-null, each of n floats, after checking n against the file.
CheckpointState load_checkpoint(const std::string& path, float* params, float* adam_m,
                                float* adam_v, size_t n);

}  // namespace ff
