#pragma once
// What `precision = fp8` adds to a training run beyond the GEMMs (kernels/fp8_recipe.h):
//   - tensor identity: the model hands each GEMM its weight's place in the parameter layout, so
//     each GEMM's scales belong to a parameter tensor, not to a buffer (train/fp8_tensor_ids.h);
//   - amax reduction: each step's amaxes are reduced (max) over the ranks of the pipeline stage
//     (tp x cp x dp), as Transformer Engine reduces over its amax-reduction group, before they
//     enter the histories, so every replica and every tp rank scales alike, and alike the serial
//     run over the same global batch (an amax is a max: the max over the ranks' micro-batches is
//     the serial run's max over the same micro-batches). dp_mode other than sync reduces over
//     tp x cp only: its replicas must not wait on each other every step;
//   - checkpoints: every tensor's history and scale, saved once per pipeline stage as the tensor
//     "fp8/<parameter>/<gemm>.<operand>" ([scale, next slot, 1024 amaxes]), so a resume is bitwise;
//     a run of another precision ignores them, and an fp8 run from a checkpoint without them
//     starts its scales afresh;
//   - evaluation records no amax (held-out batches must not steer the training scales).
#include <vector>

#include "ckpt/sharded_reader.h"
#include "ckpt/state_pieces.h"
#include "comm/mesh.h"
#include "kernels/fp8_recipe.h"
#include "train/fp8_tensor_ids.h"
#include "train/train_config.h"

namespace ff {

class Fp8Training {
 public:
  // local: this rank's layout; parts: its stage's parts. The recipe is for the run's GEMM context
  // (kernels/gemm_context.h). Collective over the mesh (creates the reduction group).
  Fp8Training(const TrainConfig& c, const ParamLayout& local, const ModelParts& parts, const Mesh* mesh);
  Fp8Training(const Fp8Training&) = delete;
  Fp8Training& operator=(const Fp8Training&) = delete;

  void end_step();  // collective over the reduction group
  const Fp8Recipe& recipe() const { return recipe_; }
  Fp8Recipe& recipe() { return recipe_; }

  // Recording off for its life (evaluation). Null: nothing.
  class NotRecording {
   public:
    explicit NotRecording(Fp8Training* t) : t_(t) {
      if (t_) t_->recipe_.set_recording(false);
    }
    ~NotRecording() {
      if (t_) t_->recipe_.set_recording(true);
    }

   private:
    Fp8Training* t_;
  };

  // Appends this stage's tensors' states (on one rank per stage: tp = cp = dp = 0); the pieces
  // point into this object until the next call.
  void add_save_pieces(std::vector<SavePiece>& pieces);
  // Restores every state the checkpoint has for this stage's tensors; returns how many.
  size_t load(ShardedCheckpointReader& r);

 private:
  Fp8Recipe recipe_;
  Fp8TensorIds ids_;
  std::vector<bool> stage_;      // by id: this stage's tensor (every expert of its MoE blocks)
  const Comm* group_ = nullptr;  // the amax reduction group; null: one rank
  bool saver_ = true;
  std::vector<std::vector<float>> saved_;  // what the last save's pieces point at
};

}  // namespace ff
