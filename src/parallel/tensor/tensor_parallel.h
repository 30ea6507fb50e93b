#pragma once
// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) with optional sequence parallelism
// (Korthikanti et al. 2022), applied from outside the model: tensor_plan.h cuts the parameters,
// TensorParallelGroup answers the model's four communication sites with regions.h, and
// ReplicaGradSync (replica_grads.h) sums the gradients of the tensors whose replicas each saw only
// part of the work. Checkpoints stay layout-free: full tensors are assembled from, and cut back into, the
// ranks' blocks.
#include <memory>
#include <vector>

#include "comm/comm.h"
#include "model/param_access.h"
#include "model/parameters.h"
#include "model/tensor_group.h"

namespace ff {

class TensorParallelGroup final : public TensorGroup {
 public:
  TensorParallelGroup(const Comm& tp, bool sequence_parallel) : tp_(tp), sp_(sequence_parallel) {}
  int size() const override { return tp_.size(); }
  int rank() const override { return tp_.rank(); }
  bool sequence_parallel() const override { return sp_; }
  // Without sp: copy_to_tp before a column GEMM, reduce_from_tp after a row GEMM. With sp:
  // gather_from_sp and reduce_scatter_to_sp in their places (the same bytes as an all-reduce,
  // split in two, and the norms in between work on 1/t of the rows).
  const float* column_input(const float* x, float* full, size_t N, int width) override;
  float* column_input_backward(float* d_full, size_t N, int width) override;
  float* row_output(float* partial, size_t N, int width) override;
  const float* row_output_backward(const float* dy, float* full, size_t N, int width) override;
  void all_reduce_max(float* x, size_t n) override;
  void all_reduce_sum(float* x, size_t n) override;
  const Comm& comm() const { return tp_; }

 private:
  const Comm& tp_;
  bool sp_;
};

// Checkpoints: every tp rank's flat block (`local`, layout sliced for that rank) into the full
// tensors' flat layout of the same model parts (a pipeline stage's, or by default all), on every
// rank (collective over tp).
void assemble_full_tensors(const Comm& tp, const ModelConfig& c, const ParamLayout& local_layout,
                           const float* local, float* full, const ModelParts* parts = nullptr);
// This rank's blocks out of a full flat buffer.
void extract_local_tensors(const ParamLayout& local_layout, const ParamLayout& full_layout,
                           const float* full, float* local);

}  // namespace ff
