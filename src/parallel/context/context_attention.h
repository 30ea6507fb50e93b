#pragma once
// Attention over a sequence split across the cp group (context_layout.h), as the AttentionOp the
// model's hooks call, serial or tensor-parallel alike. Every rank keeps its own queries; what
// moves is K/V (ring, allgather) or heads (a2a):
//   ring       K/V pieces travel around the ring; each step's send/receive is started before the
//              current piece's blocks are computed, so the transfer hides under the compute. The
//              backward sends K/V round again, with a dK/dV accumulator travelling beside each
//              piece (a rank's share is computed while the accumulator arrives, then added); after
//              cp steps the accumulators have come back to the pieces' owners.
//   allgather  every rank gathers all K/V at once (Llama 3's choice: K/V are small beside Q under
//              GQA); the backward reduce-scatters the dK/dV of every piece back to its owner.
//   a2a        Ulysses: an all-to-all turns "all heads, my rows" into "my heads, all rows", the
//              serial flash kernel runs on whole sequences, and a second all-to-all turns back.
// Partial results over key pieces merge by log-sum-exp (kernels/attention_block.h), which makes
// every variant equal to whole-sequence attention up to rounding.
//
// Document masks: the shape's ids (B, T/cp) number the documents of the whole sequence (the
// marker in context_parallel.h reads them off the whole rows), so a document may cross any chunk
// edge. Each call all-gathers the ids of every rank (B T/cp ints each): ring and all-gather give
// each block its query and key chunks' ids, a2a lays them out as the whole sequence.
#include <memory>
#include <vector>

#include "comm/comm.h"
#include "core/memory.h"
#include "io/trace.h"
#include "kernels/attention_block.h"
#include "model/model_hooks.h"
#include "parallel/context/context_layout.h"

namespace ff {

class ContextAttention final : public AttentionOp {
 public:
  // group: the cp group (rank i holds layout.chunks_of(i)); both must outlive this object.
  ContextAttention(const Comm& group, const ContextLayout& layout, CpComm mode, Tracer* tracer = nullptr);
  // s: this rank's local shape (T = the local rows, T/cp of the sequence).
  void forward(const GemmContext& gemm, float* att, float* lse, const float* q, const float* k, const float* v,
               const AttentionShape& s) override;
  void backward(const GemmContext& gemm, float* dq, float* dk, float* dv, const float* d_att, const float* q,
                const float* k, const float* v, const float* att, const float* lse,
                const AttentionShape& s) override;
  // Seconds this rank spent waiting on K/V transfers (after its compute was done), since the last
  // reset: the exposed communication.
  double exposed_seconds() const { return exposed_us_ * 1e-6; }
  void reset_exposed() { exposed_us_ = 0; }
  // FLOPs of the attention blocks this rank computed (forward and backward) since the last reset,
  // as the block kernels return them: its share of ring or all-gather attention's work. a2a runs
  // the whole-sequence kernel on a share of the heads instead and counts nothing here.
  double block_flops() const { return block_flops_; }
  void reset_block_flops() { block_flops_ = 0; }

 private:
  float* buffer(TrackedBuffer<float>& b, size_t n);
  // Local queries against the K/V piece (B, T, 2 Hkv D) of rank src: blocks merged into att/lse.
  void attend_piece(const GemmContext& gemm, float* att, float* lse, const float* q, const float* piece, int src,
                    const AttentionShape& s);
  // The backward of attend_piece: into dq (q's strides) and dpiece (the piece's layout).
  void attend_piece_backward(const GemmContext& gemm, float* dq, float* dpiece, const float* d_att, const float* q,
                             const float* piece, const float* att, const float* lse, int src, const AttentionShape& s);
  void ring_forward(const GemmContext& gemm, float* att, float* lse, const float* q, const AttentionShape& s);
  // The backward variants return this rank's own dK/dV piece.
  const float* ring_backward(const GemmContext& gemm, float* dq, const float* d_att, const float* q, const float* att,
                             const float* lse, const AttentionShape& s);
  void gather_forward(const GemmContext& gemm, float* att, float* lse, const float* q, const AttentionShape& s);
  const float* gather_backward(const GemmContext& gemm, float* dq, const float* d_att, const float* q, const float* att,
                               const float* lse, const AttentionShape& s);
  void a2a_forward(const GemmContext& gemm, float* att, float* lse, const float* q, const float* k, const float* v,
                   const AttentionShape& s);
  void a2a_backward(const GemmContext& gemm, float* dq, float* dk, float* dv, const float* d_att, const float* q,
                    const float* k, const float* v, const float* att, const float* lse, const AttentionShape& s);
  void wait_exposed(CommRequest& r, const char* what);
  // Every rank's document ids (cp, B, T/cp) when the shape has them, else null.
  const int32_t* gather_documents(const AttentionShape& s);
  // The whole sequences' ids (B, T) from gather_documents's, for a2a.
  const int32_t* sequence_documents(const AttentionShape& s);

  const Comm& group_;
  const ContextLayout& layout_;
  CpComm mode_;
  Tracer* tracer_;
  double exposed_us_ = 0;
  double block_flops_ = 0;
  // Workspace, grown to the largest call: K/V pieces and their gradients (two each for the ring),
  // the all-gathered pieces, a partial block's out/lse, and the all-to-all's staging.
  TrackedBuffer<float> kv_[2], dkv_[3], full_, dfull_, part_, part_lse_, a2a_[6];
  std::vector<int32_t> docs_, sequence_docs_;
};

}  // namespace ff
