#pragma once
// A small GQA model with random weights and a random batch, shared by the model tests.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "core/rng.h"
#include "model/llama.h"

namespace ff::testkit {

inline ModelConfig small_gqa_config() {
  ModelConfig c;
  c.vocab_size = 96;
  c.dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_dim = 96;
  c.seq_len = 24;
  c.init_std = 0.1f;  // larger than training's 0.02 so every path carries a visible signal
  return c;
}

// small_gqa_config with what current open checkpoints add to Llama 2: Qwen2's q/k/v bias, a
// head_dim other than dim / n_heads, Llama 3.1's RoPE scaling (at head_dim 24 and seq_len 24 with
// pairs kept, interpolated and divided) and a tied head.
inline ModelConfig small_open_model_config() {
  ModelConfig c = small_gqa_config();
  c.qkv_bias = true;
  c.head_size = 24;
  c.rope_scaling = {RopeScalingKind::llama3, 8.0f, 1.0f, 4.0f, 64};
  c.tied_embeddings = true;
  return c;
}

inline std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
  RngState rng{seed, 0};
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = int32_t(rng.next_below(uint64_t(vocab)));
  return t;
}

// Norm weights away from 1 and biases away from 0, so their gradients and their effect on the
// forward matter in comparisons.
inline void perturb_norms(float* params, const ParamLayout& layout, uint64_t seed) {
  for (const auto& v : layout.views())
    if (!v.is_matrix)
      for (size_t i = 0; i < v.numel; ++i)
        params[v.offset + i] = (is_bias(v.name) ? 0.0f : 1.0f) + 0.2f * normal01(seed, 99, v.offset + i);
}

inline double max_rel_diff(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num = std::max(num, double(std::fabs(a[i] - b[i])));
    den = std::max(den, double(std::fabs(b[i])));
  }
  return num / den;
}

// A loss and a gradient bitwise equal to another's.
inline bool same_bits(double loss_a, const std::vector<float>& a, double loss_b, const std::vector<float>& b) {
  return std::memcmp(&loss_a, &loss_b, sizeof(double)) == 0 && a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace ff::testkit
