#pragma once
// Work around the exchanges of two layouts that the step-time model charges beyond their
// kernels, counted from the engine's code for one block and one micro-batch.
//
// What cp_comm = a2a (DeepSpeed-Ulysses, parallel/context/ulysses_attention.cpp) does around the
// attention kernel, counted from the code for one block and one micro-batch, so the step-time
// model charges it: the all-to-alls the step blocks on (two forward: q/k/v, the output; three
// backward: q/k/v again, dout/out/lse, dq/dk/dv) and the host copies that reorder rows and heads
// around them (pack, sequence order, the output's spread, zero fills, the adding unpack).
#include <vector>

namespace ff {

struct UlyssesWork {
  std::vector<double> fwd_sends, bwd_sends;  // bytes of one rank's send buffer, per all-to-all
  double fwd_copy_bytes = 0, bwd_copy_bytes = 0;  // bytes read + written by the reshuffles
};

// rows: this rank's tokens of the micro-batch (B x T / cp); q_width: the q/k/v row width
// ((H + 2 Hkv) D), heads H and head width D, all as this rank holds them (per tp rank).
UlyssesWork ulysses_work(double rows, double q_width, double heads, double head_dim);

// A mixture-of-experts block (model/moe_mlp.cpp with parallel/expert/all_to_all_experts.cpp or
// the single-rank exchange of model/expert_exchange.h): bytes read + written by the host copies
// and weighted sums around the experts, forward and backward, for N tokens (R of them this
// rank's residual rows), `routed` = N k routed rows, C wide, `received` rows at this rank's
// experts (routed, when spread evenly).
struct MoeCopyBytes {
  double fwd = 0, bwd = 0;
};
MoeCopyBytes moe_copy_bytes(double N, double R, double routed, double received, double C);

}  // namespace ff
