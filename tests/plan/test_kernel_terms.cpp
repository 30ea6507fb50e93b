// The step model's calibrated kernel terms (calibrate/kernel_rates.h): on a synthetic cluster whose
// kernel rates are flat, each term must equal the count of the work it stands for (parameters,
// norm elements, q/k elements, SwiGLU outputs, logits, attention units) times its rate, counted
// here from the model's shapes; and a bf16 layout's MFU divides by the bf16 peak.
#include <gtest/gtest.h>

#include "model/model_config.h"
#include "plan/cluster.h"
#include "synthetic_cluster.h"
#include "plan/search.h"
#include "plan/step_time.h"

using namespace ff;

namespace {

constexpr double kOpt = 3e-9, kNorm = 1e-9, kRope = 2e-9, kSwiglu = 4e-9, kCe = 5e-9, kCopy = 6e-10, kAttn = 7e-11;

// GEMMs at 1e10 FLOP/s, free links and streams, and flat rates for every calibrated kernel.
ClusterSpec kernels_cluster() {
  ClusterSpec cl;
  cl.name = "synthetic", cl.engine = true, cl.devices_per_node = 64, cl.memory_bytes = 1e15, cl.peak_flops = 1e12;
  cl.rates.cores = 64;
  cl.rates.gemm_fp32.add(1, 1, 1e10);
  cl.rates.gemm_bf16.add(1, 1, 2e10);
  cl.rates.attention.points = {{1, 1.0}};  // replaced by attention_dim when that is present
  cl.rates.bandwidth.points = {{1, 1e30}};
  for (auto [curve, rate] : {std::pair{&cl.rates.optimizer, kOpt}, {&cl.rates.rmsnorm, kNorm}, {&cl.rates.rope, kRope},
                             {&cl.rates.swiglu, kSwiglu}, {&cl.rates.cross_entropy, kCe}, {&cl.rates.weight_copy, kCopy}})
    curve->points = {{1, rate}};
  cl.rates.attention_dim.add(1, 1, kAttn);
  cl.same_node = cl.across_nodes = LinkClass::uniform(1e-30, 1e30);
  return cl;
}

LayoutSpec layout(const char* text) { return parse_layout(text); }

}  // namespace

TEST(EngineKernelTerms, EachTermIsItsWorkTimesTheCalibratedRate) {
  const ModelConfig c = synthetic_model();
  const double B = 4, T = 32, N = B * T, C = 64, D = 16, H = 4, Hkv = 2, F = 160, V = 256, L = 4;
  const double Q = (H + 2 * Hkv) * D;
  const double params = 2 * V * C + L * (C * Q + C * H * D + 3 * C * F + 2 * C) + C;  // embed, blocks, norm, head
  const LayoutPrediction p = predict_layout(c, layout("mb=4"), kernels_cluster(), 1);
  EXPECT_NEAR(p.optimizer, params * kOpt, 1e-12);
  // Per block: two RMSNorms over (N, C), RoPE on q (H D) and k (Hkv D), SwiGLU's (N, F); the head:
  // the final norm and the loss over (N, V).
  const double block = 2 * N * C * kNorm + N * (H + Hkv) * D * kRope + N * F * kSwiglu;
  EXPECT_NEAR(p.elementwise, L * block + N * C * kNorm + N * V * kCe, 1e-12);
  EXPECT_NEAR(p.attention, L * B * H * T * T * D * kAttn, 1e-12);
  EXPECT_NEAR(p.step_seconds, p.gemm + p.attention + p.elementwise + p.optimizer, 1e-12);
  // Selective recompute repeats the block's forward element-wise work (a third) and attention's forward (2/7).
  const LayoutPrediction s = predict_layout(c, layout("mb=4,recompute=selective"), kernels_cluster(), 1);
  EXPECT_NEAR(s.elementwise - p.elementwise, L * block / 3, 1e-12);
  EXPECT_NEAR(s.attention - p.attention, L * B * H * T * T * D * kAttn * 2 / 7, 1e-12);
  // ZeRO-1 over 2 ranks: AdamW on half of each segment (rounded up; counted from the segments).
  const LayoutPrediction z = predict_layout(c, layout("dp=2,mb=4,zero=1"), kernels_cluster(), 1);
  EXPECT_GE(z.optimizer, params / 2 * kOpt - 1e-15);
  EXPECT_LE(z.optimizer, (params / 2 + 20) * kOpt);
}

TEST(EngineKernelTerms, Bf16AddsTheWeightCopyAndItsMfuUsesTheBf16Peak) {
  const ModelConfig c = synthetic_model();
  ClusterSpec cl = kernels_cluster();
  const double V = 256, C = 64, Q = 128, F = 160;
  const double params = 2 * V * C + 4 * (C * Q + C * C + 3 * C * F + 2 * C) + C;
  const LayoutPrediction f = predict_layout(c, layout("mb=4"), cl, 1);
  const LayoutPrediction b = predict_layout(c, layout("mb=4,precision=bf16"), cl, 1);
  EXPECT_NEAR(b.optimizer - f.optimizer, params * kCopy, 1e-12);  // every weight rounded once per step
  // ZeRO-3 over 2 ranks keeps no copy (its gathers hold their own).
  const LayoutPrediction z3 = predict_layout(c, layout("dp=2,mb=4,zero=3"), cl, 1);
  const LayoutPrediction z3b = predict_layout(c, layout("dp=2,mb=4,zero=3,precision=bf16"), cl, 1);
  EXPECT_NEAR(z3b.optimizer, z3.optimizer, 1e-15);
  // MFU: fp32 layouts over peak_flops, bf16 ones over peak_flops_16.
  cl.peak_flops_16 = 4e12;
  const LayoutPrediction b16 = predict_layout(c, layout("mb=4,precision=bf16"), cl, 1);
  const double fpt = training_flops_per_token(c);
  EXPECT_NEAR(f.mfu, f.tokens_per_s * fpt / 1e12, 1e-12);
  EXPECT_NEAR(b16.mfu, b16.tokens_per_s * fpt / 4e12, 1e-12);
  EXPECT_LT(b16.mfu, 1.0);
}

TEST(EngineKernelTerms, BlockingCollectivesPayTheCalibratedOverheadAsynchronousOnesDoNot) {
  const ModelConfig c = synthetic_model();
  const ClusterSpec cl = kernels_cluster();
  auto with = [&](const char* text, double overhead) {
    ClusterSpec k = cl;
    k.rates.collective_overhead = overhead;
    return predict_layout(c, layout(text), k, 1);
  };
  // tp 2: per block four all-reduces, two on the head and three (of N floats) for the vocab-parallel loss.
  EXPECT_NEAR(with("tp=2,mb=4", 1e-3).tp_comm - with("tp=2,mb=4", 0).tp_comm, (4 * 4 + 2 + 3) * 1e-3, 1e-12);
  // cp 2 all-gather: two all-gathers and a reduce-scatter per block.
  EXPECT_NEAR(with("cp=2,cp_comm=allgather,mb=4", 1e-3).tp_comm - with("cp=2,cp_comm=allgather,mb=4", 0).tp_comm,
              4 * 3 * 1e-3, 1e-12);
  // pp's sends are asynchronous and the cp ring overlaps its steps with attention: no overhead.
  EXPECT_NEAR(with("pp=2,1f1b,mb=2,m=4", 1e-3).step_seconds, with("pp=2,1f1b,mb=2,m=4", 0).step_seconds, 1e-15);
  EXPECT_NEAR(with("cp=2,cp_comm=ring,mb=4", 1e-3).step_seconds, with("cp=2,cp_comm=ring,mb=4", 0).step_seconds, 1e-15);
}
