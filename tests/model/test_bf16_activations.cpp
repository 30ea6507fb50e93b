// Activations stored in bf16 (model/activations.h): a model built in a bf16 run keeps ln1, att,
// ln2, gate_up and h in bf16 and the rest fp32; recomputation (selective, full) reproduces the
// stored run bit for bit; against the same bf16 run with fp32 storage (the GEMMs round ln1, ln2,
// att and h anyway: only gate_up, which SwiGLU reads rounded, and att, which attention's backward
// reads rounded, change values) the loss and gradients agree to bf16's precision; and the ledger
// holds exactly the bytes of the formula below.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "kernels/gemm_context.h"
#include "model_fixture.h"

using namespace ff;

namespace {

struct Result {
  double loss;
  std::vector<float> grads;
  int64_t activation_bytes;
};

// The model is built with a context whose GEMM input type is `stored` (that fixes its activations'
// type), then trained one micro-batch with that context switched to bf16 GEMM inputs.
Result run(DType stored, Recompute policy) {
  ModelConfig c = testkit::small_gqa_config();
  const int B = 4, T = c.seq_len;
  const int a = int(MemCategory::activations);
  const int64_t before = MemoryLedger::instance().snapshot().current[a];
  GemmContext gemm{.input_dtype = stored};
  const auto model = std::make_unique<Llama>(c, B, policy, nullptr, nullptr, nullptr, &gemm);
  Result r;
  r.activation_bytes = MemoryLedger::instance().snapshot().current[a] - before;
  const size_t n = model->layout().total();
  std::vector<float> params(n), grads(n, 0.0f);
  init_parameters(params.data(), model->layout(), c, 9);
  testkit::perturb_norms(params.data(), model->layout(), 3);
  auto tokens = testkit::random_tokens(B * T, c.vocab_size, 4);
  auto targets = testkit::random_tokens(B * T, c.vocab_size, 5);
  gemm.input_dtype = DType::bf16;
  r.loss = model->forward_backward(params.data(), grads.data(), tokens.data(), targets.data(), B, T, 1.0f / (B * T));
  r.grads = std::move(grads);
  return r;
}

bool same(const Result& a, const Result& b) {
  return std::memcmp(&a.loss, &b.loss, sizeof(double)) == 0 && a.grads.size() == b.grads.size() &&
         std::memcmp(a.grads.data(), b.grads.data(), a.grads.size() * 4) == 0;
}

}  // namespace

TEST(Bf16Activations, GemmOperandsAreBf16AndTheRestFp32) {
  const BlockWidths w{64, 128, 64, 4, 96};
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    Activations acts(w, {BlockKind::dense, BlockKind::moe}, 24, 24, r, true, DType::bf16);
    for (int l : {0, 1}) {
      EXPECT_EQ(acts.block(l).ln1.dtype(), DType::bf16);
      EXPECT_EQ(acts.block(l).att.dtype(), DType::bf16);
    }
    EXPECT_EQ(acts.block(0).ln2.dtype(), DType::bf16);
    EXPECT_EQ(acts.block(0).mlp.gate_up.dtype(), DType::bf16);
    EXPECT_EQ(acts.block(0).mlp.h.dtype(), DType::bf16);
    EXPECT_EQ(acts.block(1).ln2.dtype(), DType::f32);  // an MoE block's router reads it as floats
  }
  Activations fp32(w, {BlockKind::dense}, 24, 24, Recompute::none);
  EXPECT_EQ(fp32.block(0).ln1.dtype(), DType::f32);
  EXPECT_EQ(fp32.block(0).att.dtype(), DType::f32);
  EXPECT_EQ(fp32.block(0).mlp.gate_up.dtype(), DType::f32);
  EXPECT_EQ(fp32.block(0).mlp.h.dtype(), DType::f32);
}

// Recomputation writes the dropped tensors back into the same typed storage, by the same
// kernels: bitwise. Against fp32 storage: the loss within 1e-3 relative, the gradient within 2e-2
// relative L2 (bf16 keeps 8 significant bits: 2^-9 relative per rounding; seen: printed below).
TEST(Bf16Activations, RecomputeIsBitwiseAndFp32StorageAgreesToBf16Precision) {
  const Result stored = run(DType::bf16, Recompute::none);
  for (Recompute r : {Recompute::selective, Recompute::full})
    EXPECT_TRUE(same(run(DType::bf16, r), stored)) << recompute_name(r);
  const Result fp32_storage = run(DType::f32, Recompute::none);
  double diff = 0, ref = 0;
  for (size_t i = 0; i < stored.grads.size(); ++i) {
    diff += std::pow(double(stored.grads[i]) - fp32_storage.grads[i], 2);
    ref += std::pow(double(fp32_storage.grads[i]), 2);
  }
  const double loss_gap = std::fabs(stored.loss - fp32_storage.loss) / fp32_storage.loss;
  const double grad_gap = std::sqrt(diff / ref);
  std::printf("bf16 vs fp32 activation storage: loss %.2e, gradient %.2e relative\n", loss_gap, grad_gap);
  EXPECT_LT(loss_gap, 1e-3);
  EXPECT_LT(grad_gap, 2e-2);
  EXPECT_FALSE(same(stored, fp32_storage));  // gate_up and att really were rounded
}

// The ledger's activation bytes of a bf16 model against the table, written out here: per token
// and block, none keeps x_in, mid (C each), qkv Q, lse H, rstd 2 in fp32 and ln1, ln2 (C each),
// att A, gate_up 2F, h F in bf16; selective keeps x_in, qkv, mid in fp32 and gate_up in bf16; full
// x_in; plus the final norm's input, output (C each) and rstd in fp32. No tensor needs padding at
// N = 96.
TEST(Bf16Activations, LedgerBytesEqualTheFormula) {
  const ModelConfig c = testkit::small_gqa_config();
  const int64_t N = 4 * c.seq_len, L = c.n_layers, C = c.dim, Q = c.qkv_dim(), A = c.n_heads * c.head_dim(),
                H = c.n_heads, F = c.ffn_dim;
  const int64_t head = 4 * N * (2 * C + 1);
  const int64_t none = N * L * (4 * (2 * C + Q + H + 2) + 2 * (2 * C + A + 3 * F)) + head;
  const int64_t selective = N * L * (4 * (2 * C + Q) + 2 * 2 * F) + head;
  const int64_t full = N * L * 4 * C + head;
  EXPECT_EQ(run(DType::bf16, Recompute::none).activation_bytes, none);
  EXPECT_EQ(run(DType::bf16, Recompute::selective).activation_bytes, selective);
  EXPECT_EQ(run(DType::bf16, Recompute::full).activation_bytes, full);
  // fp32 storage of the same model: 2 more bytes per element of the five.
  EXPECT_EQ(run(DType::f32, Recompute::none).activation_bytes - none, N * L * 2 * (2 * C + A + 3 * F));
  EXPECT_EQ(kept_floats_per_token(c, Recompute::none, DType::bf16) * 4 * N * L + head, none);
}
