#include "parallel/tensor/tensor_hooks.h"

#include <stdexcept>

#include <fmt/format.h>

#include "kernels/convert.h"
#include "kernels/embedding.h"
#include "kernels/vocab_parallel.h"
#include "model/linear.h"
#include "parallel/tensor/regions.h"

namespace ff {

void TensorParallelHooks::check_batch(int B, int T) const {
  if (sp_ && B * T % tp_.size() != 0)
    throw std::runtime_error(fmt::format(
        "sequence parallelism splits the {} x {} tokens of a batch over {} ranks: they must "
        "divide (seq_len must be a multiple of tp)",
        B, T, tp_.size()));
}

void TensorParallelHooks::reserve(size_t max_rows, int C) {
  // One set of scratch serves every model using these hooks: the largest asked for.
  const size_t N = max_rows, NC = max_rows * size_t(C);
  if (loss_stats_.size() < 3 * N) loss_stats_.allocate(3 * N, MemCategory::workspace);
  if (row_full_.size() < NC) row_full_.allocate(NC, MemCategory::workspace);
  if (sp_ && gathered_.size() < NC) gathered_.allocate(NC, MemCategory::workspace);
}

ConstTypedPtr TensorParallelHooks::column_input(ConstTypedPtr x, size_t N, int width) {
  if (!sp_) return regions::copy_to_tp_forward(x);
  const TypedPtr full(gathered_.data(), x.dtype());
  regions::gather_from_sp_forward(tp_, x, full, N * size_t(width));
  return full;
}

float* TensorParallelHooks::column_input_backward(float* d_full, size_t N, int width) {
  if (sp_) return regions::gather_from_sp_backward(tp_, d_full, N * size_t(width));
  regions::copy_to_tp_backward(tp_, d_full, N * size_t(width));
  return d_full;
}

const float* TensorParallelHooks::sum_partial(size_t n_full) {
  if (sp_) return regions::reduce_scatter_to_sp_forward(tp_, row_full_.data(), n_full);
  regions::reduce_from_tp_forward(tp_, row_full_.data(), n_full);
  return row_full_.data();
}

void TensorParallelHooks::row_output(const GemmContext& g, float* out, const float* resid, ConstTypedPtr x,
                                     WeightRef W, int N, int in, int C) {
  const size_t n = resid_rows(size_t(N)) * size_t(C), n_full = size_t(N) * size_t(C);
  matmul_xwt(g, row_full_.data(), x, W, N, in, C);
  const float* y = sum_partial(n_full);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) out[i] = resid[i] + y[i];
}

const float* TensorParallelHooks::row_output_backward(const float* dy, size_t N, int C) {
  if (!sp_) return regions::reduce_from_tp_backward(dy);
  regions::reduce_scatter_to_sp_backward(tp_, dy, row_full_.data(), N * size_t(C));
  return row_full_.data();
}

void TensorParallelHooks::embedding(float* x, const int32_t* tokens, const float* E, int N, int C,
                                    VocabRange vocab) {
  const size_t n_full = size_t(N) * size_t(C);
  embedding_forward_slice(row_full_.data(), tokens, E, N, C, vocab.first, vocab.count);
  copy_rows(x, sum_partial(n_full), resid_rows(size_t(N)) * size_t(C));
}

void TensorParallelHooks::embedding_backward(float* dE, const float* dx, const int32_t* tokens, int N, int C,
                                             VocabRange vocab) {
  embedding_backward_slice(dE, row_output_backward(dx, size_t(N), C), tokens, N, C, vocab.first, vocab.count);
}

double TensorParallelHooks::loss(float* logits, float* losses, const int32_t* targets, int N, VocabRange vocab,
                                 bool with_grad, float grad_scale, TypedPtr grad_rounded) {
  float* row_max = loss_stats_.data();
  float* partials = row_max + N;
  vocab_slice_row_max(logits, row_max, N, vocab.count);
  tp_.all_reduce(row_max, size_t(N), ReduceOp::max);
  vocab_slice_partials(logits, row_max, targets, N, vocab.count, vocab.first, with_grad, partials);
  tp_.all_reduce(partials, 2 * size_t(N));
  const double total = vocab_slice_finish(logits, row_max, partials, targets, N, vocab.count, vocab.first,
                                          with_grad, grad_scale, losses);
  // Rounded in a pass of its own here (the serial loss does it row by row, in cache).
  if (with_grad && grad_rounded) convert_from_f32(grad_rounded, logits, size_t(N) * size_t(vocab.count));
  return total;
}

}  // namespace ff
