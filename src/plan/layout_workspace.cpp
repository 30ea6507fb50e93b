#include "plan/layout_workspace.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/flash_attention_bf16.h"
#include "kernels/gemm_amx.h"
#include "model/model_hooks.h"

namespace ff {

PrecisionBytes precision_bytes(Precision p) {
  PrecisionBytes b;
  if (p == Precision::bf16 || p == Precision::fp16) b.gemm_input = 2, b.weight_copy = 2;
  return b;
}

bool has_weight_copy(const LayoutSpec& L) {
  return precision_bytes(L.gemm).weight_copy > 0 && !(L.zero == 3 && L.dp * L.cp > 1);
}

int64_t packed_weight_bytes(const ParamLayout& layout, const ModelConfig& c, const LayoutSpec& L,
                            const EngineHost& host) {
  if (!has_weight_copy(L) || !host.packed_weights || !host.native_16bit(L.gemm)) return 0;
  if (host.on_tile_gemm(L.gemm)) return 0;  // the tile GEMM packs per product
  // The products read fused matrices: q|k|v and gate|up (w1|w3 per expert) are one weight each,
  // stored back to back with the same input width.
  auto fused_below = [](const std::string& name) {
    for (const char* tail : {"k_proj.weight", "v_proj.weight", "up_proj.weight", "w3.weight"}) {
      const size_t n = std::strlen(tail);
      if (name.size() >= n && name.compare(name.size() - n, std::string::npos, tail) == 0) return true;
    }
    return false;
  };
  std::vector<std::pair<int64_t, int64_t>> weights;  // (out, in) of each matrix a product reads
  for (const ParamView& v : layout.views()) {
    if (!v.is_matrix || (!c.tied_embeddings && v.name == "model.embed_tokens.weight")) continue;
    if (fused_below(v.name) && !weights.empty() && weights.back().second == v.shape[1])
      weights.back().first += v.shape[0];
    else
      weights.emplace_back(v.shape[0], v.shape[1]);
  }
  // oneDNN's bf16 blocks (measured with oneDNN 2.6, brgemm): the product's N to 64, K to 32.
  auto up = [](int64_t n, int64_t b) { return (n + b - 1) / b * b; };
  int64_t bytes = 0;
  for (const auto& [out, in] : weights)
    bytes += 2 * (up(out, 64) * up(in, 32) + up(in, 64) * up(out, 32));  // x W^T, then dy W
  return bytes;
}

AttentionScratch attention_scratch_floats(const ModelConfig& c, Precision p) {
  if (p == Precision::bf16) {
    const AttentionScratchFloats f = attention_bf16_scratch_floats(c.seq_len, c.seq_len, c.head_dim());
    return {int64_t(f.forward), int64_t(f.backward)};
  }
  const int64_t lanes = 16, tile = 64;
  const int64_t Dp = (c.head_dim() + lanes - 1) / lanes * lanes, Tp = (c.seq_len + tile - 1) / tile * tile;
  return {2 * Tp * Dp + 2 * tile * Dp + tile * tile, 8 * Tp * Dp + 2 * Tp + 2 * tile * tile};
}

int64_t context_workspace_bytes(const ModelConfig& c, const LayoutSpec& L, const BlockWidths& w) {
  if (L.cp <= 1) return 0;
  const int64_t B = L.micro_batch, T = c.seq_len / L.cp, D = c.head_dim(), cp = L.cp;
  const int64_t H = w.H, Hkv = (w.Q - w.A) / (2 * D);
  int64_t floats = 0;
  if (L.cp_comm == CpComm::a2a) {  // ulysses_attention.cpp: a2a_[0..5], part_ and part_lse_ reused
    const int64_t hq = H / cp, hk = Hkv / cp, rows = B * T, W = (hq + 2 * hk) * D, Wo = hq * D + hq;
    const int64_t wide = std::max(W, Wo), full = B * c.seq_len;
    floats = 2 * cp * rows * wide + 2 * full * wide + B * hq * c.seq_len + rows * H + 2 * full * hq * D;
  } else {  // context_attention.cpp: kv_ pieces, the partial block output and its lse
    const int64_t piece = B * T * 2 * Hkv * D;
    floats = B * (T / 2) * H * D + B * H * (T / 2) + piece;
    if (L.cp_comm == CpComm::ring) floats += piece + 3 * piece;  // kv_[1]; dkv_[0..2]
    else floats += 2 * piece * cp + piece;                 // full_, dfull_; dkv_[0]
  }
  return floats * 4;
}

int64_t moe_workspace_bytes(const ModelConfig& c, const LayoutSpec& L, const BlockWidths& w, bool has_moe) {
  if (!has_moe) return 0;
  const int64_t N = int64_t(L.micro_batch) * c.seq_len / L.cp;
  int64_t floats = int64_t(moe_scratch_floats(w, size_t(N)));
  // moe_training.cpp: staging for micro_batch x seq_len x top_k routes from each of ep ranks.
  if (L.ep > 1) floats += int64_t(L.micro_batch) * c.seq_len * w.K * L.ep * w.C;
  return floats * 4;
}

int64_t gemm_input_scratch_bytes(const LayoutSpec& L, const BlockWidths& w, int64_t N, int64_t R, int64_t vocab,
                                 bool head, bool has_moe) {
  const PrecisionBytes pb = precision_bytes(L.gemm);
  if (pb.gemm_input == 4) return 0;
  auto pad = [](int64_t n) { return (n + 31) / 32 * 32; };
  int64_t most = 0;
  const bool copy = has_weight_copy(L);
  // x_stored: the input is an activation kept 16-bit (ln1, att, ln2, h), never converted;
  // dy_stored: the output gradient arrives 16-bit, rounded by the kernel that made it
  // (model/llama_rounded_grads.cpp): gate/up's by SwiGLU's backward, the head's by the loss, q/k/v's
  // by RoPE's backward (unless a zero-bubble split keeps it fp32 for the weight pass, or 2F rows
  // cannot hold it), o's and down's by the norm backward above (not when sequence parallelism
  // gathers the rows or a zero-bubble weight pass reads them later; down's not across a pipeline
  // stage's boundary, where the gradient arrives from another stage).
  auto linear = [&](int64_t rows, int64_t in, int64_t out, bool x_stored, bool dy_stored = false) {
    const int64_t x = x_stored ? 0 : rows * in, dy = dy_stored ? 0 : pad(rows * out);
    if (copy)  // the weight is read from the step's copy: x alone forward; dy, then x, backward
      most = std::max({most, x, dy + x});
    else       // forward x, W; backward dy, W, x (linear_backward_run_precision)
      most = std::max({most, pad(x) + out * in, dy + pad(out * in) + x});
  };
  (void)R;  // under sp the projections read the gathered N rows
  const bool zb = L.pp > 1 && L.schedule == PipeSchedule::zb_h1, resid_rounded = !L.sp && !zb;
  linear(N, w.C, w.Q, true, !zb && w.Q <= 4 * w.F), linear(N, w.A, w.C, true, resid_rounded);
  if (w.F > 0) linear(N, w.C, 2 * w.F, true, true), linear(N, w.F, w.C, true, resid_rounded && L.pp == 1);
  if (has_moe) {  // an MoE block's ln2 and expert activations stay fp32
    linear(N, w.C, w.E, false);
    if (w.Fs > 0) linear(N, w.C, 2 * w.Fs, false), linear(N, w.Fs, w.C, false);
  }
  if (head) linear(N, w.C, vocab, false, true);
  return most * pb.gemm_input;
}

namespace {

// f(rows, in, out) for each linear of a rank's blocks and head with a fixed shape, x (rows, in),
// W (out, in), dy (rows, out); the routed experts (rows vary by step) are left out.
template <class F>
void for_each_fixed_linear(const BlockWidths& w, int64_t N, int64_t vocab, bool head, bool has_moe, F f) {
  f(N, w.C, w.Q), f(N, w.A, w.C);  // under sp the projections read the gathered N rows
  if (w.F > 0) f(N, w.C, 2 * w.F), f(N, w.F, w.C);
  if (has_moe) {
    f(N, w.C, w.E);
    if (w.Fs > 0) f(N, w.C, 2 * w.Fs), f(N, w.Fs, w.C);
  }
  if (head) f(N, w.C, vocab);
}

}  // namespace

int64_t emulated_widen_floats(const LayoutSpec& L, const BlockWidths& w, int64_t N, int64_t vocab, bool head,
                              bool has_moe, const EngineHost& host) {
  if (precision_bytes(L.gemm).gemm_input == 4 || host.native_16bit(L.gemm)) return 0;
  if (host.on_tile_gemm(L.gemm)) return 0;  // the tile GEMM multiplies bf16 itself
  int64_t most = 0;
  for_each_fixed_linear(w, N, vocab, head, has_moe, [&](int64_t rows, int64_t in, int64_t out) {
    most = std::max({most, rows * in + out * in, rows * out + out * in, rows * out + rows * in});
  });
  return most;
}

int64_t tile_gemm_scratch_bytes(const LayoutSpec& L, const BlockWidths& w, int64_t N, int64_t vocab, bool head,
                                bool has_moe, const EngineHost& host) {
  if (!host.on_tile_gemm(L.gemm)) return 0;
  auto bytes = [](bool ta, bool tb, int64_t M, int64_t Nc, int64_t K) {
    return int64_t(gemm_bf16_on_tiles_scratch_bytes(ta, tb, int(M), int(Nc), int(K)));
  };
  int64_t most = 0;
  for_each_fixed_linear(w, N, vocab, head, has_moe, [&](int64_t rows, int64_t in, int64_t out) {
    most = std::max({most, bytes(false, true, rows, out, in), bytes(false, false, rows, in, out),  // x W^T, dy W
                     bytes(true, false, out, in, rows)});                                          // dy^T x
  });
  return most;
}

}  // namespace ff
