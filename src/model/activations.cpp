#include "model/activations.h"

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

namespace {
struct Widths {
  int64_t C, Q, A, H, F;
};
Widths widths(const ModelConfig& c) {
  return {c.dim, c.qkv_dim(), int64_t(c.n_heads) * c.head_dim(), c.n_heads, c.ffn_dim};
}
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
}  // namespace

int64_t kept_floats_per_token(const ModelConfig& c, Recompute r) {
  Widths w = widths(c);
  Kept k = kept_by(r);
  return (k.x_in ? w.C : 0) + (k.rstd1 ? 1 : 0) + (k.ln1 ? w.C : 0) + (k.qkv ? w.Q : 0) +
         (k.att ? w.A : 0) + (k.lse ? w.H : 0) + (k.mid ? w.C : 0) + (k.rstd2 ? 1 : 0) +
         (k.ln2 ? w.C : 0) + (k.gate_up ? 2 * w.F : 0) + (k.h ? w.F : 0);
}

// Each tensor starts on a 64-byte boundary so the GEMM library sees the same alignment whether a
// tensor lives in the kept arena or in scratch, which keeps recomputation bitwise identical.
static int64_t padded(int64_t floats) { return (floats + 15) / 16 * 16; }

Activations::Activations(const ModelConfig& c, int max_rows, Recompute policy) : policy_(policy) {
  const int64_t N = max_rows;
  const Widths w = widths(c);
  const Kept k = kept_by(policy);
  const std::pair<bool, int64_t> tensors[] = {
      {k.x_in, w.C}, {k.rstd1, 1},  {k.ln1, w.C},      {k.qkv, w.Q},         {k.att, w.A}, {k.lse, w.H},
      {k.mid, w.C},  {k.rstd2, 1},  {k.ln2, w.C},      {k.gate_up, 2 * w.F}, {k.h, w.F}};
  int64_t kept_per_block = 0, scratch_size = 0;
  for (auto [keep, width] : tensors) (keep ? kept_per_block : scratch_size) += padded(width * N);
  kept_.allocate(size_t(kept_per_block * c.n_layers), MemCategory::activations);
  if (scratch_size > 0) scratch_.allocate(size_t(scratch_size), MemCategory::workspace);
  resid_final_.allocate(size_t(N * w.C), MemCategory::activations);
  rstd_final_.allocate(size_t(N), MemCategory::activations);
  ln_final_.allocate(size_t(N * w.C), MemCategory::activations);

  blocks_.resize(size_t(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    float* kp = kept_.data() + kept_per_block * l;
    float* sp = scratch_.data();  // every block shares the one scratch set
    float** slots[] = {&blocks_[l].x_in, &blocks_[l].rstd1, &blocks_[l].ln1,   &blocks_[l].qkv,
                       &blocks_[l].att,  &blocks_[l].lse,   &blocks_[l].mid,   &blocks_[l].rstd2,
                       &blocks_[l].ln2,  &blocks_[l].gate_up, &blocks_[l].h};
    for (size_t i = 0; i < std::size(tensors); ++i) {
      auto [keep, width] = tensors[i];
      float*& cursor = keep ? kp : sp;
      *slots[i] = cursor;
      cursor += padded(width * N);
    }
  }
}

}  // namespace ff
