#include "parallel/pipeline/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ff {

const EnumTable<PipeSchedule>& pipe_schedule_names() {
  static const EnumTable<PipeSchedule> names({{PipeSchedule::gpipe, "gpipe"},
                                               {PipeSchedule::one_f_one_b, "1f1b"},
                                               {PipeSchedule::interleaved, "interleaved"},
                                               {PipeSchedule::zb_h1, "zb-h1"}},
                                              {{PipeSchedule::zb_h1, "zb_h1"}});
  return names;
}

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
  // ZB-H1 keeps 1F1B's memory by holding at most p microbatches (F done, W not) on any rank; with
  // m < p that cap never binds and the schedule is just GPipe with split backward, so we refuse
  // rather than mislabel.
  if (s.kind == PipeSchedule::zb_h1 && s.microbatches < s.stages)
    fail("needs microbatches (" + m + ") >= stages (" + p + ")");
}

bool schedule_fills_pipeline(const PipeScheduleSpec& s) {
  return s.kind != PipeSchedule::one_f_one_b || s.microbatches >= s.stages;
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

// ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", the handcrafted schedule ZB-H1).
// Splitting the backward into B (input gradient, which the previous stage waits for) and W (weight
// gradient, which nobody waits for) lets W's fill the slots where 1F1B idles for a gradient. The
// paper's memory rule for ZB-H1 is that the peak activation memory stays 1F1B's, p microbatches:
// a microbatch's stashed input is needed until its W (pipeline_executor.h frees it there), so it
// counts as in flight from F until W, and every rank keeps that count <= p. Rank r's list:
//   warm-up   F_0 .. F_{p-r-1}: as in 1F1B, p - r forwards before the first B.
//   steady    B_k, then W_{k-r} (once k >= r), then F_{k+p-r} (while forwards remain): one F, one B
//             and one W per step. W's lag their B by r steps, r being what this rank may hold on
//             top of its p - r warm-up forwards: in flight reaches p - r + r = p after r steps and
//             stays there, as each step's W frees a stash before its F adds one.
//   cool-down the r W's still owed, W_{m-r} .. W_{m-1}, in the slots where 1F1B waits for the
//             last gradients. That is the paper's reason to put W's off: to fill bubbles, and
//             never further than the memory limit allows (here r steps).
// Rank 0 does each W right after its B; the last rank holds p, like 1F1B's rank 0. With unit costs
// F = B = W the step takes 3m + p - 1: rank r idles only r slots before its first forward and
// p - 1 - r waiting for its first gradient, against 1F1B's 3(m + p - 1).
void zb_h1(int p, int m, int r, Emitter& e) {
  const int warmup = p - r;  // <= m: validate_schedule_spec requires m >= p
  for (int i = 0; i < warmup; ++i) e.forward(i, 0);
  for (int k = 0; k < m; ++k) {
    e.backward(k, 0, PipeOp::backward_input);
    if (k >= r) e.weight(k - r, 0);
    if (warmup + k < m) e.forward(warmup + k, 0);
  }
  for (int k = m - r; k < m; ++k) e.weight(k, 0);
}

}  // namespace

std::vector<std::vector<PipeAction>> make_schedule(const PipeScheduleSpec& spec) {
  validate_schedule_spec(spec);
  const int p = spec.stages, m = spec.microbatches, v = spec.chunks;
  std::vector<std::vector<PipeAction>> out(p);
  for (int r = 0; r < p; ++r) {
    Emitter e{p, v, r, out[r]};
    switch (spec.kind) {
      case PipeSchedule::gpipe: gpipe(m, e); break;
      case PipeSchedule::one_f_one_b: one_f_one_b(p, m, r, e); break;
      case PipeSchedule::interleaved: interleaved(p, m, v, r, e); break;
      case PipeSchedule::zb_h1: zb_h1(p, m, r, e); break;
    }
  }
  return out;
}

}  // namespace ff
