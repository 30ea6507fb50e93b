#pragma once
// What the forward pass keeps for the backward pass, per recompute policy, and the scratch the
// backward pass needs. Every buffer is accounted (activations = kept across the step,
// workspace = reused scratch).
//
// Per dense block and token, in floats (C = dim, Q = qkv width, A = H*D, F = ffn_dim, H = heads;
// the MLP's tensors, gate_up and h, are the dense kind's: another block kind lists its own):
//   none:      x_in C, rstd 2, ln1 C, qkv Q, att A, lse H, mid C, ln2 C, gate_up 2F, h F
//   selective: x_in C, qkv Q, mid C, gate_up 2F       (norms, attention core and SwiGLU, the
//              non-GEMM work, are recomputed; no GEMM is ever recomputed)
//   full:      x_in C                                 (the whole block is recomputed)
// A recomputing policy adds one block's worth of the dropped tensors as workspace.
//
// In a 16-bit run (`gemm_dtype` bf16 or f16) the GEMM inputs and outputs that are not the residual
// stream are stored in that type, as PyTorch's autocast keeps them:
//   - ln1, ln2, h: only GEMMs read them (q/k/v, gate/up, down: forward and weight gradient), which
//     would round them anyway. RMSNorm and SwiGLU write them rounded: bitwise fp32 storage.
//   - att: the o GEMM reads it, and attention's backward (D = rowsum(dO * O)) reads it widened.
//     The bf16 attention kernel writes it rounded itself; an fp32-only attention (cp's, fp16's)
//     is staged fp32 in the model's staging buffer and rounded once.
//   - gate_up: the GEMM stores it rounded (on a packed weight; else it writes fp32 into the
//     model's staging buffer, which SwiGLU's forward rounds as it reads it); SwiGLU (forward,
//     recomputed or not, and backward) reads the rounded values. What the norms, RoPE, attention
// and the loss read stays fp32: x_in, mid, rstd, qkv (until attention takes bf16 q/k/v), lse.
// Per dense block and token in a 16-bit run, in 4-byte units:
//   none:      4C + Q + A + H + 3F + 2 - (2C + A + 3F) / 2
//   selective: 2C + Q + F             (gate_up's 2F at 2 bytes)
//   full:      C
// An MoE block keeps its ln2 in fp32: the router and the dispatch read its rows as floats.
//
// Under tensor parallelism the widths are this rank's (Q, A, H, F divided by t; C whole), and
// with sequence parallelism the residual-stream tensors (x_in, rstd1, ln1, mid, rstd2, ln2) hold
// only this rank's N/t rows: Korthikanti et al.'s sbh(10 + 24/t) becomes sbh*34/t, and our flash
// attention keeps no s x s term at all.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/enum_table.h"
#include "core/memory.h"
#include "model/model_config.h"
#include "model/parameters.h"

namespace ff {

enum class Recompute { none, selective, full };
const EnumTable<Recompute>& recompute_names();
inline const char* recompute_name(Recompute r) { return recompute_names().name(r); }

// A dense MLP's kept tensors; a mixture-of-experts block will keep its own (router scores,
// dispatched tokens, expert activations) in their place.
struct DenseMlpActs {
  TypedPtr gate_up;  // (N, 2F)  in the GEMM input type
  TypedPtr h;        // (N, F)   silu(gate) * up, in the GEMM input type
};

// An MoE block's kept tensors (model/moe_mlp.h). Integers (routes, slots, counts) are int32
// stored in float-sized slots of the same arena. Rows of the expert-side tensors: the tokens this
// rank's experts receive, at most N*k*ep (every rank of the ep group sending all its N*k routes).
struct MoeMlpActs {
  float* logits;          // (N, E) router logits
  float* scores;          // (N, E) softmax or sigmoid of the logits
  float* gates;           // (N, k) the chosen experts' scores renormalised over the chosen
  float* route;           // (N, k) int32: the chosen experts, best first
  float* slot;            // (N, k) int32: the route's row in the dispatched order; -1 dropped
  float* counts;          // (2E) int32: routes kept per global expert (sent), then received per
                          //      (source rank, local expert)
  float* x_send;          // (N*k, C) the routed tokens sorted by expert (stable)
  float* x_exp;           // (N*k*ep, C) the tokens at this rank's experts, by local expert
  float* gate_up;         // (N*k*ep, 2Fe)
  float* h;               // (N*k*ep, Fe)
  float* y_exp;           // (N*k*ep, C) the experts' outputs
  float* y_send;          // (N*k, C) the outputs back in dispatched order
  float* shared_gate_up;  // (N, 2Fs)
  float* shared_h;        // (N, Fs)
};

// Pointers to one block's tensors for the current batch: (B*T, width) row-major; R = the
// residual-stream rows this rank holds (B*T, or B*T/t under sequence parallelism).
struct BlockActs {
  float* x_in;     // (R, C)  block input = residual stream
  float* rstd1;    // (R)
  TypedPtr ln1;    // (R, C)  in the GEMM input type
  float* qkv;      // (N, Q)  q and k after RoPE
  TypedPtr att;    // (N, A)  attention output before o_proj, in the GEMM input type
  float* lse;      // (B, H, T)
  float* mid;      // (R, C)  residual after attention
  float* rstd2;    // (R)
  TypedPtr ln2;    // (R, C)  in the GEMM input type (f32 in an MoE block)
  DenseMlpActs mlp;
  MoeMlpActs moe;  // an MoE block's, in place of mlp
  // Document-masked micro-batches (model/documents.h): each row's document id (N) and RoPE's
  // tables at each row's position in its document (N, D/2); null without a document mask.
  const int32_t* doc = nullptr;
  const float* rope_cos = nullptr;
  const float* rope_sin = nullptr;
};

// One rank's block widths: C the residual width; Q, A, H, F its share of the qkv width, the
// attention output width, the heads and the FFN width. MoE blocks: E experts, k routes per token,
// Fe an expert's width, Fs the shared experts' width, EP the expert-parallel degree.
struct BlockWidths {
  int64_t C, Q, A, H, F;
  int64_t E = 0, K = 0, Fe = 0, Fs = 0, EP = 1;
};
BlockWidths block_widths(const ModelConfig& c);  // the serial model's

// Floats per token that a policy keeps for one block (the table above). "Floats" are 4-byte
// units throughout: a tensor stored in a 16-bit `gemm_dtype` counts half its elements.
int64_t kept_floats_per_token(const ModelConfig& c, Recompute r, DType gemm_dtype = DType::f32);
// Floats a policy keeps for one block of `rows` tokens whose residual-stream tensors hold
// `resid_rows` rows (rows / t under sequence parallelism, rows otherwise).
int64_t kept_floats_per_block(const BlockWidths& w, Recompute r, int64_t rows, int64_t resid_rows,
                              BlockKind kind = BlockKind::dense, DType gemm_dtype = DType::f32);

// The floats an Activations of these blocks allocates: the kept arena (plus the final norm's
// tensors when `head`) and the shared recompute scratch, each tensor padded to 64 bytes. The
// planner predicts the ledger's activation and workspace bytes from this.
struct ActivationFloats {
  int64_t kept = 0, scratch = 0;
};
ActivationFloats activation_floats(const BlockWidths& w, const std::vector<BlockKind>& kinds, int64_t max_rows,
                                   int64_t resid_rows, Recompute policy, bool head,
                                   DType gemm_dtype = DType::f32);

class Activations {
 public:
  // One block per entry of `kinds` (each block's tensors are those of its kind). max_rows tokens
  // per micro-batch, of which this rank keeps resid_rows of the residual stream. head: also the
  // final norm's tensors (the chunk ending the model). gemm_dtype: the type of the tensors only
  // GEMMs read (the run's GEMM input type).
  Activations(const BlockWidths& w, const std::vector<BlockKind>& kinds, int max_rows, int resid_rows,
              Recompute policy, bool head = true, DType gemm_dtype = DType::f32);
  // Where block l's tensors live: the kept arena for what the policy keeps, the shared
  // recompute scratch for the rest.
  const BlockActs& block(int l) const { return blocks_[l]; }
  float* final_out() { return resid_final_.data(); }  // (R, C) output of the last block
  float* final_rstd() { return rstd_final_.data(); }  // (R)
  float* final_ln() { return ln_final_.data(); }      // (R, C); R = resid_rows
  Recompute policy() const { return policy_; }
  DType gemm_dtype() const { return gemm_dtype_; }
  // This micro-batch's documents (ids (N), RoPE tables (N, D/2)), which every block then points
  // at; empty vectors: no document mask.
  void set_documents(std::vector<int32_t> doc, std::vector<float> rope_cos, std::vector<float> rope_sin);

 private:
  Recompute policy_;
  DType gemm_dtype_;
  TrackedBuffer<float> kept_, scratch_, resid_final_, rstd_final_, ln_final_;
  std::vector<BlockActs> blocks_;
  std::vector<int32_t> doc_;
  std::vector<float> rope_cos_, rope_sin_;
};

}  // namespace ff
