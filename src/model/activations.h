#pragma once
// What the forward pass keeps for the backward pass, per recompute policy, and the scratch the
// backward pass needs. Every buffer is accounted (activations = kept across the step,
// workspace = reused scratch).
//
// Per block and token, in floats (C = dim, Q = qkv width, A = H*D, F = ffn_dim, H = heads):
//   none:      x_in C, rstd 2, ln1 C, qkv Q, att A, lse H, mid C, ln2 C, gate_up 2F, h F
//   selective: x_in C, qkv Q, mid C, gate_up 2F       (norms, attention core and SwiGLU, the
//              non-GEMM work, are recomputed; no GEMM is ever recomputed)
//   full:      x_in C                                 (the whole block is recomputed)
// A recomputing policy adds one block's worth of the dropped tensors as workspace.
#include <cstdint>
#include <string>
#include <vector>

#include "core/memory.h"
#include "model/model_config.h"

namespace ff {

enum class Recompute { none, selective, full };
const char* recompute_name(Recompute r);
Recompute parse_recompute(const std::string& s);  // throws listing the valid names

// Pointers to one block's tensors for the current batch: (B*T, width) row-major.
struct BlockActs {
  float* x_in;     // (N, C)  block input = residual stream
  float* rstd1;    // (N)
  float* ln1;      // (N, C)
  float* qkv;      // (N, Q)  q and k after RoPE
  float* att;      // (N, A)  attention output before o_proj
  float* lse;      // (B, H, T)
  float* mid;      // (N, C)  residual after attention
  float* rstd2;    // (N)
  float* ln2;      // (N, C)
  float* gate_up;  // (N, 2F)
  float* h;        // (N, F)  silu(gate) * up
};

// Floats per token that a policy keeps for one block (the table above).
int64_t kept_floats_per_token(const ModelConfig& c, Recompute r);

class Activations {
 public:
  Activations(const ModelConfig& c, int max_rows, Recompute policy);
  // Where block l's tensors live: the kept arena for what the policy keeps, the shared
  // recompute scratch for the rest.
  const BlockActs& block(int l) const { return blocks_[l]; }
  float* final_out() { return resid_final_.data(); }  // (N, C) output of the last block
  float* final_rstd() { return rstd_final_.data(); }  // (N)
  float* final_ln() { return ln_final_.data(); }      // (N, C)
  Recompute policy() const { return policy_; }

 private:
  Recompute policy_;
  TrackedBuffer<float> kept_, scratch_, resid_final_, rstd_final_, ln_final_;
  std::vector<BlockActs> blocks_;
};

}  // namespace ff
