#include "parallel/pipeline_schedule.h"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

namespace ff {

const char* to_string(PipeSchedule kind) {
  switch (kind) {
    case PipeSchedule::gpipe: return "gpipe";
    case PipeSchedule::one_f_one_b: return "1f1b";
    case PipeSchedule::interleaved: return "interleaved";
    case PipeSchedule::zb_h1: return "zb_h1";
  }
  return "?";
}

const char* to_string(PipeOp op) {
  switch (op) {
    case PipeOp::forward: return "forward";
    case PipeOp::backward: return "backward";
    case PipeOp::backward_input: return "backward_input";
    case PipeOp::backward_weight: return "backward_weight";
    case PipeOp::send_act: return "send_act";
    case PipeOp::recv_act: return "recv_act";
    case PipeOp::send_grad: return "send_grad";
    case PipeOp::recv_grad: return "recv_grad";
  }
  return "?";
}

void validate_schedule_spec(const PipeScheduleSpec& s) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string(to_string(s.kind)) + " " + why);
  };
  const std::string p = std::to_string(s.stages), m = std::to_string(s.microbatches),
                    v = std::to_string(s.chunks);
  if (s.stages < 2) fail("needs stages (" + p + ") >= 2");
  if (s.microbatches < 1) fail("needs microbatches (" + m + ") >= 1");
  if (s.kind == PipeSchedule::interleaved) {
    if (s.chunks < 2) fail("needs chunks (" + v + ") >= 2");
    // Megatron's interleaved order walks microbatches in groups of p per chunk.
    if (s.microbatches % s.stages != 0)
      fail("needs microbatches (" + m + ") to be a multiple of stages (" + p + ")");
    return;
  }
  if (s.chunks != 1) fail("needs chunks (" + v + ") == 1; only interleaved uses chunks");
  // ZB-H1 keeps 1F1B's memory by capping rank r at p - r activations; with m < p that cap never
  // binds and the schedule is just GPipe with split backward, so we refuse rather than mislabel.
  if (s.kind == PipeSchedule::zb_h1 && s.microbatches < s.stages)
    fail("needs microbatches (" + m + ") >= stages (" + p + ")");
}

namespace {

// Emits compute with its adjacent communication. With p >= 2 the neighbour of every virtual stage
// is on rank r +- 1 (mod p), whatever the chunk.
struct Emitter {
  int p, v, rank;
  std::vector<PipeAction>& out;
  int stage(int chunk) const { return chunk * p + rank; }
  int prev() const { return (rank - 1 + p) % p; }
  int next() const { return (rank + 1) % p; }

  void forward(int mb, int chunk) {
    const int s = stage(chunk);
    if (s > 0) out.push_back({PipeOp::recv_act, mb, chunk, prev()});
    out.push_back({PipeOp::forward, mb, chunk, -1});
    if (s < p * v - 1) out.push_back({PipeOp::send_act, mb, chunk, next()});
  }
  // op is backward or backward_input: both consume the output gradient and produce the input one.
  void backward(int mb, int chunk, PipeOp op) {
    const int s = stage(chunk);
    if (s < p * v - 1) out.push_back({PipeOp::recv_grad, mb, chunk, next()});
    out.push_back({op, mb, chunk, -1});
    if (s > 0) out.push_back({PipeOp::send_grad, mb, chunk, prev()});
  }
  void weight(int mb, int chunk) { out.push_back({PipeOp::backward_weight, mb, chunk, -1}); }
};

// All forwards, then all backwards: simplest order, m live activations on every rank.
void gpipe(int m, Emitter& e) {
  for (int i = 0; i < m; ++i) e.forward(i, 0);
  for (int i = 0; i < m; ++i) e.backward(i, 0, PipeOp::backward);
}

// Rank r runs p-1-r forwards ahead, which is exactly enough to keep it busy until the first
// gradient returns; from then on one forward per backward caps live activations at p - r.
void one_f_one_b(int p, int m, int r, Emitter& e) {
  const int warmup = std::min(p - 1 - r, m);
  for (int i = 0; i < warmup; ++i) e.forward(i, 0);
  for (int i = 0; i < m - warmup; ++i) {
    e.forward(warmup + i, 0);
    e.backward(i, 0, PipeOp::backward);
  }
  for (int i = m - warmup; i < m; ++i) e.backward(i, 0, PipeOp::backward);
}

// Megatron's interleaved order: forwards take groups of p microbatches through chunk 0, then the
// same group through chunk 1, ...; backwards the same with chunks reversed. Warmup adds (v-1)*p
// forwards so the first backward's inputs have travelled through all earlier chunks, plus
// 2*(p-1-r) so that the rank stays busy while the gradient comes back.
void interleaved(int p, int m, int v, int r, Emitter& e) {
  const int total = m * v;
  const int group = p * v;
  auto mb = [&](int k) { return (k / group) * p + k % p; };
  auto fchunk = [&](int k) { return (k % group) / p; };
  auto bchunk = [&](int k) { return v - 1 - (k % group) / p; };
  const int warmup = std::min(2 * (p - 1 - r) + (v - 1) * p, total);
  for (int k = 0; k < warmup; ++k) e.forward(mb(k), fchunk(k));
  for (int k = 0; k < total - warmup; ++k) {
    e.forward(mb(warmup + k), fchunk(warmup + k));
    e.backward(mb(k), bchunk(k), PipeOp::backward);
  }
  for (int k = total - warmup; k < total; ++k) e.backward(mb(k), bchunk(k), PipeOp::backward);
}

// ZB-H1 (Qi et al. 2023) built by list scheduling on unit costs F = B = W = 1: at each free slot a
// rank prefers B (it is on the critical path back to stage 0), then F while it holds fewer than
// p - r live activations (1F1B's peak, hence the same memory), else a deferred W. The W's thus land
// in the slots where 1F1B would wait for a gradient, which is what shrinks the cooldown bubble.
std::vector<std::vector<PipeAction>> zb_h1(int p, int m) {
  std::vector<std::vector<PipeAction>> out(p);
  constexpr int never = 1 << 30;
  // fdone[r][i] / bdone[r][i]: time F / B of microbatch i finished on rank r.
  std::vector<std::vector<int>> fdone(p, std::vector<int>(m, never)), bdone = fdone;
  std::vector<int> free_at(p, 0), next_f(p, 0), next_b(p, 0);
  std::vector<std::deque<int>> pending_w(p);
  int remaining = 3 * m * p;
  // Some rank can always move within a few slots (dependencies only point to earlier stages or
  // microbatches), so this bound only trips if the rules above are broken.
  const int limit = 8 * (m + p) * 3 + 16;
  for (int t = 0; remaining > 0; ++t) {
    if (t > limit) throw std::logic_error("zb_h1 list scheduler made no progress");
    for (int r = 0; r < p; ++r) {
      if (free_at[r] > t) continue;
      Emitter e{p, 1, r, out[r]};
      const int b = next_b[r], f = next_f[r];
      const bool b_ready = b < f && (r == p - 1 || bdone[r + 1][b] <= t);
      const bool f_ready = f < m && f - b < p - r && (r == 0 || fdone[r - 1][f] <= t);
      if (b_ready) {
        e.backward(b, 0, PipeOp::backward_input);
        bdone[r][b] = t + 1;
        pending_w[r].push_back(b);
        ++next_b[r];
      } else if (f_ready) {
        e.forward(f, 0);
        fdone[r][f] = t + 1;
        ++next_f[r];
      } else if (!pending_w[r].empty()) {
        e.weight(pending_w[r].front(), 0);
        pending_w[r].pop_front();
      } else {
        continue;
      }
      free_at[r] = t + 1;
      --remaining;
    }
  }
  return out;
}

}  // namespace

std::vector<std::vector<PipeAction>> make_schedule(const PipeScheduleSpec& spec) {
  validate_schedule_spec(spec);
  const int p = spec.stages, m = spec.microbatches, v = spec.chunks;
  if (spec.kind == PipeSchedule::zb_h1) return zb_h1(p, m);
  std::vector<std::vector<PipeAction>> out(p);
  for (int r = 0; r < p; ++r) {
    Emitter e{p, v, r, out[r]};
    switch (spec.kind) {
      case PipeSchedule::gpipe: gpipe(m, e); break;
      case PipeSchedule::one_f_one_b: one_f_one_b(p, m, r, e); break;
      case PipeSchedule::interleaved: interleaved(p, m, v, r, e); break;
      case PipeSchedule::zb_h1: break;
    }
  }
  return out;
}

}  // namespace ff
