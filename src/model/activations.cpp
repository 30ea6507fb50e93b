#include "model/activations.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace ff {

const EnumTable<Recompute>& recompute_names() {
  static const EnumTable<Recompute> names{
      {Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}};
  return names;
}

BlockWidths block_widths(const ModelConfig& c) {
  BlockWidths w{c.dim, c.qkv_dim(), int64_t(c.n_heads) * c.head_dim(), c.n_heads, c.ffn_dim};
  if (c.moe.enabled()) {
    w.E = c.moe.n_experts, w.K = c.moe.top_k, w.Fe = c.moe.expert_width(c.ffn_dim);
    w.Fs = int64_t(c.moe.shared_experts) * w.Fe;
  }
  return w;
}

namespace {
// Which tensors a policy keeps; the others are recomputed into scratch.
struct Kept {
  bool x_in, rstd1, ln1, qkv, att, lse, mid, rstd2, ln2, gate_up, h;
};
Kept kept_by(Recompute r) {
  switch (r) {
    case Recompute::none: return {true, true, true, true, true, true, true, true, true, true, true};
    case Recompute::selective:
      return {true, false, false, true, false, false, true, false, false, true, false};
    case Recompute::full:
      return {true, false, false, false, false, false, false, false, false, false, false};
  }
  throw std::logic_error("unknown recompute policy");
}

// Each tensor: whether the policy keeps it, its width, whether it is a residual-stream tensor
// (sharded by rows under sequence parallelism), its element type, and where BlockActs points at
// it (through exactly one of the member pointers).
struct TensorSpec {
  bool keep;
  int64_t width;
  bool resid;
  float* BlockActs::*attn;            // an attention-half tensor, or
  float* DenseMlpActs::*mlp;          // a dense MLP's, or
  float* MoeMlpActs::*moe = nullptr;  // an MoE block's, or
  int64_t fixed = 0;                  // elements independent of the rows (width 0)
  TypedPtr BlockActs::*typed = nullptr;         // a typed attention-half tensor, or
  TypedPtr DenseMlpActs::*typed_mlp = nullptr;  // a typed dense MLP tensor
  DType dtype = DType::f32;
};
// A GEMM's input or output stored in the run's GEMM input type `t` (activations.h says which).
TensorSpec gemm_input(bool keep, int64_t width, bool resid, TypedPtr BlockActs::*m, DType t) {
  return {keep, width, resid, nullptr, nullptr, nullptr, 0, m, nullptr, t};
}
// A block's tensors in layout order: the attention half's, then its MLP's (by kind).
std::vector<TensorSpec> tensor_specs(BlockKind kind, const BlockWidths& w, Recompute r, DType t) {
  const Kept k = kept_by(r);
  // The router and the dispatch of an MoE block read ln2's rows as floats.
  const DType ln2_type = kind == BlockKind::dense ? t : DType::f32;
  std::vector<TensorSpec> s = {
      {k.x_in, w.C, true, &BlockActs::x_in, nullptr},   {k.rstd1, 1, true, &BlockActs::rstd1, nullptr},
      gemm_input(k.ln1, w.C, true, &BlockActs::ln1, t), {k.qkv, w.Q, false, &BlockActs::qkv, nullptr},
      gemm_input(k.att, w.A, false, &BlockActs::att, t), {k.lse, w.H, false, &BlockActs::lse, nullptr},
      {k.mid, w.C, true, &BlockActs::mid, nullptr},     {k.rstd2, 1, true, &BlockActs::rstd2, nullptr},
      gemm_input(k.ln2, w.C, true, &BlockActs::ln2, ln2_type)};
  switch (kind) {
    case BlockKind::dense:
      s.push_back({k.gate_up, 2 * w.F, false, nullptr, nullptr, nullptr, 0, nullptr, &DenseMlpActs::gate_up, t});
      s.push_back({k.h, w.F, false, nullptr, nullptr, nullptr, 0, nullptr, &DenseMlpActs::h, t});
      break;
    case BlockKind::moe: {
      // Routing is cheap but its all-to-alls are not: everything is kept unless the whole block
      // is recomputed.
      const bool keep = r != Recompute::full;
      const int64_t E = w.E, K = w.K, KE = w.K * w.EP;
      auto moe = [&](int64_t width, float* MoeMlpActs::*m, int64_t fixed = 0) {
        s.push_back({keep, width, false, nullptr, nullptr, m, fixed});
      };
      moe(E, &MoeMlpActs::logits), moe(E, &MoeMlpActs::scores), moe(K, &MoeMlpActs::gates);
      moe(K, &MoeMlpActs::route), moe(K, &MoeMlpActs::slot), moe(0, &MoeMlpActs::counts, 2 * E);
      moe(K * w.C, &MoeMlpActs::x_send), moe(KE * w.C, &MoeMlpActs::x_exp);
      moe(KE * 2 * w.Fe, &MoeMlpActs::gate_up), moe(KE * w.Fe, &MoeMlpActs::h);
      moe(KE * w.C, &MoeMlpActs::y_exp), moe(K * w.C, &MoeMlpActs::y_send);
      moe(2 * w.Fs, &MoeMlpActs::shared_gate_up), moe(w.Fs, &MoeMlpActs::shared_h);
      break;
    }
  }
  return s;
}
// Points block b's member for tensor t at p.
void place(BlockActs& b, const TensorSpec& t, float* p) {
  if (t.typed) b.*t.typed = TypedPtr(p, t.dtype);
  else if (t.typed_mlp) b.mlp.*t.typed_mlp = TypedPtr(p, t.dtype);
  else if (t.attn) b.*t.attn = p;
  else if (t.mlp) b.mlp.*t.mlp = p;
  else b.moe.*t.moe = p;
}
// Elements, in 4-byte units (a 16-bit tensor of n elements takes ceil(n / 2)).
int64_t floats_of(const TensorSpec& t, int64_t rows, int64_t resid_rows) {
  const int64_t n = t.width * (t.resid ? resid_rows : rows) + t.fixed;
  return t.dtype == DType::f32 ? n : (n * int64_t(dtype_size(t.dtype)) + 3) / 4;
}
}  // namespace

int64_t kept_floats_per_block(const BlockWidths& w, Recompute r, int64_t rows, int64_t resid_rows,
                              BlockKind kind, DType gemm_dtype) {
  int64_t n = 0;
  for (const TensorSpec& t : tensor_specs(kind, w, r, gemm_dtype))
    if (t.keep) n += floats_of(t, rows, resid_rows);
  return n;
}

int64_t kept_floats_per_token(const ModelConfig& c, Recompute r, DType gemm_dtype) {
  // Two tokens, halved: a 16-bit tensor's odd element count would round up at one.
  return kept_floats_per_block(block_widths(c), r, 2, 2, BlockKind::dense, gemm_dtype) / 2;
}

// Each tensor starts on a 64-byte boundary so the GEMM library sees the same alignment whether a
// tensor lives in the kept arena or in scratch, which keeps recomputation bitwise identical.
static int64_t padded(int64_t floats) { return (floats + 15) / 16 * 16; }

ActivationFloats activation_floats(const BlockWidths& w, const std::vector<BlockKind>& kinds, int64_t max_rows,
                                   int64_t resid_rows, Recompute policy, bool head, DType gemm_dtype) {
  const int64_t N = max_rows, R = resid_rows;
  // Kept tensors back to back, block after block; one scratch set, as large as the largest
  // block's dropped tensors, shared by every block.
  ActivationFloats f;
  for (BlockKind kind : kinds) {
    int64_t dropped = 0;
    for (const TensorSpec& t : tensor_specs(kind, w, policy, gemm_dtype))
      (t.keep ? f.kept : dropped) += padded(floats_of(t, N, R));
    f.scratch = std::max(f.scratch, dropped);
  }
  if (head) f.kept += 2 * R * w.C + R;  // the final norm's output, input and rstd
  return f;
}

Activations::Activations(const BlockWidths& w, const std::vector<BlockKind>& kinds, int max_rows,
                         int resid_rows, Recompute policy, bool head, DType gemm_dtype)
    : policy_(policy), gemm_dtype_(gemm_dtype) {
  const int64_t N = max_rows, R = resid_rows;
  const ActivationFloats f = activation_floats(w, kinds, N, R, policy, false, gemm_dtype);
  kept_.allocate(size_t(f.kept), MemCategory::activations);
  if (f.scratch > 0) scratch_.allocate(size_t(f.scratch), MemCategory::workspace);
  if (head) {
    resid_final_.allocate(size_t(R * w.C), MemCategory::activations);
    rstd_final_.allocate(size_t(R), MemCategory::activations);
    ln_final_.allocate(size_t(R * w.C), MemCategory::activations);
  }

  blocks_.resize(kinds.size());
  float* kp = kept_.data();
  for (size_t l = 0; l < kinds.size(); ++l) {
    float* sp = scratch_.data();
    for (const TensorSpec& t : tensor_specs(kinds[l], w, policy, gemm_dtype)) {
      float*& cursor = t.keep ? kp : sp;
      place(blocks_[l], t, cursor);
      cursor += padded(floats_of(t, N, R));
    }
  }
}

void Activations::set_documents(std::vector<int32_t> doc, std::vector<float> rope_cos, std::vector<float> rope_sin) {
  doc_ = std::move(doc), rope_cos_ = std::move(rope_cos), rope_sin_ = std::move(rope_sin);
  const bool on = !doc_.empty();
  for (BlockActs& a : blocks_) {
    a.doc = on ? doc_.data() : nullptr;
    a.rope_cos = on ? rope_cos_.data() : nullptr;
    a.rope_sin = on ? rope_sin_.data() : nullptr;
  }
}

}  // namespace ff
