#pragma once
// A weights-only checkpoint of one serial process (CheckpointState::weights_only: parameters, no
// optimizer moments) written one bounded piece at a time, so whoever produces the model piece by
// piece (import, from a Hugging Face folder) never holds all of it. A run that starts from it
// begins at step 0 with a fresh optimizer.
#include <cstdint>
#include <optional>
#include <string>

#include "ckpt/checkpoint_state.h"
#include "ckpt/sharded_writer.h"
#include "model/parameters.h"

namespace ff {

class WeightsCheckpointWriter {
 public:
  // Prepares run_dir/step_{state.step}/ (state.weights_only is set here).
  WeightsCheckpointWriter(std::string run_dir, CheckpointState state);
  // Elements [begin, end) of v's whole tensor in row-major order, contiguous at data; written
  // before it returns, so data may be reused. v is a view of the serial layout.
  void add(const ParamView& v, int64_t begin, int64_t end, const float* data);
  // Writes the manifest, which refuses unless every parameter was covered exactly once, and
  // makes the step the run's latest.
  void finish();

 private:
  std::string run_dir_;
  CheckpointState state_;
  std::string step_dir_;
  std::optional<ShardStreamWriter> file_;
};

}  // namespace ff
