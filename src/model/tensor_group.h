#pragma once
// What the model asks of its tensor-parallel group, at the four sites where Megatron places its
// communication regions: the input of a column-parallel GEMM (q/k/v, gate/up, the LM head), the
// output of a row-parallel GEMM (o, down) and of the vocab-parallel embedding, and the two small
// reductions of the vocab-parallel cross-entropy. The serial model passes no group and each site
// is the identity; src/parallel/tensor_parallel.h implements it with the regions of
// src/parallel/regions.h, so the model never calls a collective (DESIGN principles 3 and 6).
//
// Rows: N = the micro-batch's tokens; R = the residual-stream rows this rank holds: N, or its
// N/t chunk under sequence parallelism (rows [rank * R, rank * R + R)).
#include <cstddef>

namespace ff {

class TensorGroup {
 public:
  virtual ~TensorGroup() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  virtual bool sequence_parallel() const = 0;
  size_t resid_rows(size_t N) const { return sequence_parallel() ? N / size_t(size()) : N; }

  // Forward of a column-parallel input: x (R, width) -> (N, width). Returns x itself (copy to
  // the group) or `full` after gathering the sequence shards into it.
  virtual const float* column_input(const float* x, float* full, size_t N, int width) = 0;
  // Its backward: d_full (N, width), this rank's partial input gradient, is summed over the
  // group in place; returns where this rank's (R, width) rows of the sum now are.
  virtual float* column_input_backward(float* d_full, size_t N, int width) = 0;
  // Forward of a row-parallel output: partial (N, width) summed over the group in place;
  // returns where this rank's (R, width) rows of the sum are.
  virtual float* row_output(float* partial, size_t N, int width) = 0;
  // Its backward: dy (R, width) -> (N, width): dy itself, or `full` after gathering.
  virtual const float* row_output_backward(const float* dy, float* full, size_t N, int width) = 0;

  // In place over the group, for the vocab-parallel loss.
  virtual void all_reduce_max(float* x, size_t n) = 0;
  virtual void all_reduce_sum(float* x, size_t n) = 0;
};

}  // namespace ff
