#pragma once
// Tensor parallelism's hooks into the model (Megatron-LM, Shoeybi et al. 2019; sequence
// parallelism, Korthikanti et al. 2022): the column input, row output, embedding and loss of
// model_hooks.h, each built from the regions of regions.h. Attention and the MLP stay the serial
// ones: with the heads and the FFN width split, each rank's share of them is local work.
#include "comm/comm.h"
#include "core/memory.h"
#include "model/model_hooks.h"

namespace ff {

class TensorParallelHooks final : public ModelHooks {
 public:
  TensorParallelHooks(const Comm& tp, bool sequence_parallel) : tp_(tp), sp_(sequence_parallel) {}
  int size() const { return tp_.size(); }
  bool sequence_parallel() const { return sp_; }
  const Comm& comm() const { return tp_; }

  size_t resid_rows(size_t N) const override { return sp_ ? N / size_t(tp_.size()) : N; }
  size_t resid_row0(size_t N) const override { return sp_ ? size_t(tp_.rank()) * resid_rows(N) : 0; }
  int column_ranks() const override { return tp_.size(); }
  void check_batch(int B, int T) const override;
  void reserve(size_t max_rows, int C) override;
  // Without sp: copy_to_tp before a column GEMM, reduce_from_tp after a row GEMM. With sp:
  // gather_from_sp and reduce_scatter_to_sp in their places (the same bytes as an all-reduce,
  // split in two, and the norms in between work on 1/t of the rows).
  ConstTypedPtr column_input(ConstTypedPtr x, size_t N, int width) override;
  float* column_input_backward(float* d_full, size_t N, int width) override;
  // Each rank's GEMM gives a partial sum over its slice of `in`; the residual joins after the
  // reduction, once.
  void row_output(const GemmContext& g, float* out, const float* resid, ConstTypedPtr x, WeightRef W, int N,
                  int in, int C) override;
  const float* row_output_backward(const float* dy, size_t N, int C) override;
  // Vocab-parallel lookup: each rank fills the rows of its tokens, the group sums.
  void embedding(float* x, const int32_t* tokens, const float* E, int N, int C, VocabRange vocab) override;
  void embedding_backward(float* dE, const float* dx, const int32_t* tokens, int N, int C,
                          VocabRange vocab) override;
  // Vocab-parallel cross-entropy: the (N, V) logits are never gathered, only a max and two sums
  // per row.
  double loss(float* logits, float* losses, const int32_t* targets, int N, VocabRange vocab, bool with_grad,
              float grad_scale, TypedPtr grad_rounded) override;

 private:
  // row_full_ (n_full floats), this rank's partial sum, summed over the group: returns where this
  // rank's (R, C) rows of the sum are.
  const float* sum_partial(size_t n_full);

  const Comm& tp_;
  bool sp_;
  TrackedBuffer<float> loss_stats_;  // (3N) row max, sum, target logit
  TrackedBuffer<float> gathered_;    // (N, C) sequence-parallel column input (16-bit: its first half)
  TrackedBuffer<float> row_full_;    // (N, C) row-parallel partial output
};

}  // namespace ff
