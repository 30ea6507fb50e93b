#include "plan/exchange_work.h"

namespace ff {

UlyssesWork ulysses_work(double rows, double q_width, double heads, double head_dim) {
  // Per row (summed over the cp destinations: a rank sends every row once): Q floats of q/k/v,
  // A = H D of attention output, H of log-sum-exp. A copy reads and writes (8 bytes per float),
  // a fill writes (4), an adding unpack reads two and writes one (12).
  const double Q = q_width, A = heads * head_dim, H = heads, f = 4;
  UlyssesWork w;
  w.fwd_sends = {rows * Q * f, rows * (A + H) * f};
  w.bwd_sends = {rows * Q * f, rows * (2 * A + H) * f, rows * Q * f};
  // Forward: pack q/k/v, to sequence order, spread the output beside its lse (A + H), back to
  // rows (A + H), zero att (A) and the lse rows (H), the adding unpack (A + H), rows_to_lse (H).
  w.fwd_copy_bytes = rows * (8 * (2 * Q + 2 * (A + H) + H) + 4 * (A + H) + 12 * (A + H));
  // Backward: pack and order q/k/v (2 Q), the lse to rows (H), pack and order dout/out/lse
  // (2 (2A + H)), split dout and out (2A), rows_to_lse (H), zero dq/dk/dv (Q), back to rows (Q),
  // the adding unpack (Q).
  w.bwd_copy_bytes = rows * (8 * (3 * Q + 2 * (2 * A + H) + 2 * A + 2 * H) + 4 * Q + 12 * Q);
  return w;
}

MoeCopyBytes moe_copy_bytes(double N, double R, double routed, double received, double C) {
  // Forward: the routed rows gathered in expert order (copy), the exchange's regrouping of the
  // received rows both ways (dispatch, combine: a copy each), the residual into the output (R
  // rows), the gated sum of each route into its token (reads the row and the output, writes it).
  const double fwd = 8 * routed + 8 * received + 8 * received + 8 * R + 12 * routed;
  // Backward: each route's output gradient scaled by its gate with the gate's dot product (reads
  // d_out and y, writes one row), the two regroupings again, the input gradients added back into
  // their tokens (read two, write one), and the zeroed d_ln (N rows).
  const double bwd = 12 * routed + 8 * received + 8 * received + 12 * routed + 4 * N;
  return {fwd * C, bwd * C};
}

}  // namespace ff
