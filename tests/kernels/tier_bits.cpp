// The element-wise kernels' outputs as digests, for tier_bits.py to compare across ISA tiers
// (kernels/cpu_isa.h): run once per FIVEFOLD_MAX_CPU_ISA, each run prints the tier it took and one
// line per output: its name, whether every tier must give its very bits ("exact": no sum across
// vector lanes feeds it) or may round apart ("sums": a vectorised reduction does), and an FNV-1a
// digest of its bytes. Inputs come from fixed seeds, sized with vector remainders, and no "exact"
// output is fed from a "sums" one (the RMSNorm backward takes a given rstd).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/adamw.h"
#include "kernels/convert.h"
#include "kernels/cpu_isa.h"
#include "kernels/cross_entropy.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace {

std::vector<float> normal(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(gen);
  return x;
}

template <class T>
void emit(const char* name, const char* kind, const std::vector<T>& v) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ p[i]) * 1099511628211ull;
  std::printf("%s %s %016llx\n", name, kind, static_cast<unsigned long long>(h));
}

void emit_double(const char* name, const char* kind, double d) { emit(name, kind, std::vector<double>{d}); }

// Rows of C = 3 * 64 + 13 columns: whole 16- and 8-lane vectors and a remainder.
constexpr int kRows = 37, kCols = 205;

void rmsnorm() {
  const size_t n = size_t(kRows) * kCols;
  const auto x = normal(n, 1), w = normal(kCols, 2), dy = normal(n, 3);
  std::vector<float> y(n), rstd(kRows);
  std::vector<uint16_t> y16(n);
  ff::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), kRows, kCols, 1e-5f);
  ff::rmsnorm_forward(ff::TypedPtr(y16.data(), ff::DType::bf16), rstd.data(), x.data(), w.data(), kRows, kCols, 1e-5f);
  emit("rmsnorm_forward_y", "sums", y);
  emit("rmsnorm_forward_y_bf16", "sums", y16);
  emit("rmsnorm_forward_rstd", "sums", rstd);
  // The backward from a given rstd: dw sums rows per column (no lanes), dx takes a row dot product.
  std::vector<float> given_rstd(kRows);
  for (int r = 0; r < kRows; ++r) given_rstd[r] = 0.5f + 0.01f * float(r);
  std::vector<float> dx(n, 0.0f), dw(kCols, 0.0f);
  std::vector<uint16_t> dx16(n);
  ff::rmsnorm_backward(dx.data(), ff::TypedPtr(dx16.data(), ff::DType::bf16), dw.data(), dy.data(), x.data(), w.data(),
                       given_rstd.data(), kRows, kCols);
  emit("rmsnorm_backward_dx", "sums", dx);
  emit("rmsnorm_backward_dx_bf16", "sums", dx16);
  emit("rmsnorm_backward_dw", "exact", dw);
}

void swiglu() {
  const int F = kCols;
  const size_t n = size_t(kRows) * F;
  const auto gate_up = normal(2 * n, 4, 2.0f), dh = normal(n, 5);
  std::vector<float> h(n), d_gate_up(2 * n);
  std::vector<uint16_t> h16(n), kept(2 * n), d16(2 * n);
  ff::swiglu_forward(h.data(), gate_up.data(), kRows, F);
  emit("swiglu_forward", "exact", h);
  ff::swiglu_forward_rounding(ff::TypedPtr(h16.data(), ff::DType::bf16), ff::TypedPtr(kept.data(), ff::DType::bf16),
                              gate_up.data(), kRows, F);
  emit("swiglu_forward_rounding_h", "exact", h16);
  emit("swiglu_forward_rounding_kept", "exact", kept);
  ff::swiglu_backward(d_gate_up.data(), dh.data(), gate_up.data(), kRows, F);
  emit("swiglu_backward", "exact", d_gate_up);
  ff::swiglu_backward(ff::TypedPtr(d16.data(), ff::DType::bf16), dh.data(),
                      ff::ConstTypedPtr(kept.data(), ff::DType::bf16), kRows, F);
  emit("swiglu_backward_bf16", "exact", d16);
}

void rope() {
  const int B = 2, T = 19, heads = 3, kv_heads = 1, D = 40, stride = (heads + 2 * kv_heads) * D;
  std::vector<float> cos(size_t(T) * D / 2), sin(cos.size());
  ff::rope_tables(cos.data(), sin.data(), T, D, 10000.0f);
  auto x = normal(size_t(B) * T * stride, 6);
  const auto dx = normal(x.size(), 7);
  std::vector<uint16_t> back16(x.size());
  ff::rope_forward(x.data(), cos.data(), sin.data(), B, T, heads + kv_heads, D, stride);
  emit("rope_forward", "exact", x);
  ff::rope_backward(x.data(), cos.data(), sin.data(), B, T, heads + kv_heads, D, stride);
  emit("rope_backward", "exact", x);
  ff::rope_backward_rounded(ff::TypedPtr(back16.data(), ff::DType::bf16), dx.data(), cos.data(), sin.data(), B, T,
                            heads, kv_heads, D, stride);
  emit("rope_backward_rounded", "exact", back16);
}

void cross_entropy() {
  const int N = 9, V = 1003;
  auto logits = normal(size_t(N) * V, 8, 3.0f);
  std::vector<int32_t> targets(N);
  for (int i = 0; i < N; ++i) targets[i] = (i * 337) % V;
  targets[4] = ff::kIgnoredTarget;
  std::vector<float> losses(N);
  std::vector<uint16_t> grad16(logits.size());
  emit_double("cross_entropy_forward", "sums",
              ff::cross_entropy_forward(logits.data(), losses.data(), targets.data(), N, V));
  const double total = ff::cross_entropy_forward_backward(logits.data(), losses.data(), targets.data(), N, V, 0.125f,
                                                          ff::TypedPtr(grad16.data(), ff::DType::bf16));
  emit_double("cross_entropy_total", "sums", total);
  emit("cross_entropy_losses", "sums", losses);
  emit("cross_entropy_grad", "sums", logits);
  emit("cross_entropy_grad_bf16", "sums", grad16);
}

void optimizer() {
  const size_t n = 70001;  // past convert's and AdamW's parallel thresholds, with a remainder
  auto p = normal(n, 9), m = normal(n, 10, 0.01f), v = normal(n, 11, 0.01f);
  for (auto& x : v) x = x * x;
  const auto g = normal(n, 12, 0.02f);
  ff::AdamWHyper h{3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3};
  ff::adamw_update(p.data(), g.data(), m.data(), v.data(), n, h, true);
  emit("adamw_param", "exact", p);
  emit("adamw_m", "exact", m);
  emit("adamw_v", "exact", v);
  emit_double("l2_norm", "sums", ff::l2_norm(g.data(), n));
  auto s = g;
  ff::scale_inplace(s.data(), n, 0.37f);
  emit("scale_inplace", "exact", s);
}

void conversions() {
  const size_t n = 70001;
  auto x = normal(n, 13, 100.0f);
  x[5] = 1e-40f;  // a subnormal, kept by the integer rounding
  std::vector<uint16_t> b(n);
  std::vector<float> back(n);
  ff::convert_from_f32(ff::TypedPtr(b.data(), ff::DType::bf16), x.data(), n);
  emit("convert_to_bf16", "exact", b);
  ff::convert_to_f32(back.data(), ff::ConstTypedPtr(b.data(), ff::DType::bf16), n);
  emit("convert_from_bf16", "exact", back);
  ff::round_through(x.data(), 1000, ff::DType::bf16);
  emit("round_through_bf16", "exact", x);
}

}  // namespace

int main() {
  const ff::KernelIsa run = std::max(ff::build_kernel_isa(), ff::kernel_isa());
  std::printf("# tier %s build %s\n", ff::kernel_isa_name(run), ff::kernel_isa_name(ff::build_kernel_isa()));
  rmsnorm();
  swiglu();
  rope();
  cross_entropy();
  optimizer();
  conversions();
  return 0;
}
