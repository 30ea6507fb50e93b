#include "model/activations.h"

#include <array>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace ff {

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

Recompute parse_recompute(const std::string& s) {
  if (s == "none") return Recompute::none;
  if (s == "selective") return Recompute::selective;
  if (s == "full") return Recompute::full;
  throw std::runtime_error("recompute must be one of none | selective | full (got '" + s + "')");
}

BlockWidths block_widths(const ModelConfig& c) {
  return {c.dim, c.qkv_dim(), int64_t(c.n_heads) * c.head_dim(), c.n_heads, c.ffn_dim};
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

// Each tensor: whether the policy keeps it, its width, and whether it is a residual-stream
// tensor (sharded by rows under sequence parallelism). The order is BlockActs'.
struct TensorSpec {
  bool keep;
  int64_t width;
  bool resid;
};
std::array<TensorSpec, 11> tensor_specs(const BlockWidths& w, Recompute r) {
  const Kept k = kept_by(r);
  return {{{k.x_in, w.C, true}, {k.rstd1, 1, true}, {k.ln1, w.C, true}, {k.qkv, w.Q, false},
           {k.att, w.A, false}, {k.lse, w.H, false}, {k.mid, w.C, true}, {k.rstd2, 1, true},
           {k.ln2, w.C, true}, {k.gate_up, 2 * w.F, false}, {k.h, w.F, false}}};
}
}  // namespace

int64_t kept_floats_per_block(const BlockWidths& w, Recompute r, int64_t rows, int64_t resid_rows) {
  int64_t n = 0;
  for (const TensorSpec& t : tensor_specs(w, r))
    if (t.keep) n += t.width * (t.resid ? resid_rows : rows);
  return n;
}

int64_t kept_floats_per_token(const ModelConfig& c, Recompute r) {
  return kept_floats_per_block(block_widths(c), r, 1, 1);
}

// Each tensor starts on a 64-byte boundary so the GEMM library sees the same alignment whether a
// tensor lives in the kept arena or in scratch, which keeps recomputation bitwise identical.
static int64_t padded(int64_t floats) { return (floats + 15) / 16 * 16; }

Activations::Activations(const BlockWidths& w, int n_layers, int max_rows, int resid_rows,
                         Recompute policy, bool head)
    : policy_(policy) {
  const int64_t N = max_rows, R = resid_rows;
  const auto tensors = tensor_specs(w, policy);
  auto size_of = [&](const TensorSpec& t) { return padded(t.width * (t.resid ? R : N)); };
  int64_t kept_per_block = 0, scratch_size = 0;
  for (const TensorSpec& t : tensors) (t.keep ? kept_per_block : scratch_size) += size_of(t);
  kept_.allocate(size_t(kept_per_block * n_layers), MemCategory::activations);
  if (scratch_size > 0) scratch_.allocate(size_t(scratch_size), MemCategory::workspace);
  if (head) {
    resid_final_.allocate(size_t(R * w.C), MemCategory::activations);
    rstd_final_.allocate(size_t(R), MemCategory::activations);
    ln_final_.allocate(size_t(R * w.C), MemCategory::activations);
  }

  blocks_.resize(size_t(n_layers));
  for (int l = 0; l < n_layers; ++l) {
    float* kp = kept_.data() + kept_per_block * l;
    float* sp = scratch_.data();  // every block shares the one scratch set
    float** slots[] = {&blocks_[l].x_in, &blocks_[l].rstd1, &blocks_[l].ln1,   &blocks_[l].qkv,
                       &blocks_[l].att,  &blocks_[l].lse,   &blocks_[l].mid,   &blocks_[l].rstd2,
                       &blocks_[l].ln2,  &blocks_[l].mlp.gate_up, &blocks_[l].mlp.h};
    for (size_t i = 0; i < std::size(tensors); ++i) {
      float*& cursor = tensors[i].keep ? kp : sp;
      *slots[i] = cursor;
      cursor += size_of(tensors[i]);
    }
  }
}

}  // namespace ff
