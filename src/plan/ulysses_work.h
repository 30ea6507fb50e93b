#pragma once
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

}  // namespace ff
