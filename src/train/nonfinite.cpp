#include "train/nonfinite.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "comm/comm.h"
#include "core/memory.h"

namespace ff {

const EnumTable<NonfiniteAction>& nonfinite_action_names() {
  static const EnumTable<NonfiniteAction> names{{NonfiniteAction::stop, "stop", "locate it, no update"},
                                                {NonfiniteAction::skip, "skip", "the step"}};
  return names;
}

bool step_is_nonfinite(double loss, double grad_norm, bool expect_gradient) {
  return !std::isfinite(loss) || !std::isfinite(grad_norm) || (expect_gradient && grad_norm == 0);
}

std::string describe_nonfinite(double loss, double grad_norm) {
  if (!std::isfinite(grad_norm)) return fmt::format("the gradient norm became {}", grad_norm);
  if (!std::isfinite(loss)) return "the loss is not finite";
  return "the gradient norm is exactly 0 (the gradient vanished: an overflow inside the forward, "
         "typically an RMSNorm's sum of squares, zeroes every gradient behind it)";
}

namespace {

// One place a value of the step can go bad, in the order the step computes them.
struct Check {
  std::string label;
  std::function<bool()> bad;  // true when the tensor holds a non-finite value (or a 1/rms of 0)
};

bool any_nonfinite(ConstTypedPtr p, size_t n) {
  bool bad = false;
  if (p.dtype() == DType::f32) {
    const float* x = p.f32();
    for (size_t i = 0; i < n; ++i) bad |= !std::isfinite(x[i]);
    return bad;
  }
  // A 16-bit activation (model/activations.h): inf and NaN are the all-ones exponent.
  const uint16_t exponent = p.dtype() == DType::bf16 ? 0x7f80 : 0x7c00;
  const uint16_t* x = static_cast<const uint16_t*>(p.data());
  for (size_t i = 0; i < n; ++i) bad |= (x[i] & exponent) == exponent;
  return bad;
}
// 1/rms = 0 means the sum of squares was inf: no NaN yet, but the norm's output and every gradient
// through it are 0.
bool overflowed_rstd(const float* x, size_t n) {
  bool bad = false;
  for (size_t i = 0; i < n; ++i) bad |= !std::isfinite(x[i]) || x[i] == 0;
  return bad;
}

std::vector<Check> forward_checks(const Activations& acts, Activations& head, const BlockWidths& w, int L,
                                  size_t N, size_t R, const double* loss) {
  std::vector<Check> c;
  const size_t C = size_t(w.C);
  auto add = [&](std::string label, ConstTypedPtr x, size_t n, bool rstd = false) {
    c.push_back(
        {std::move(label), [x, n, rstd] { return rstd ? overflowed_rstd(x.f32(), n) : any_nonfinite(x, n); }});
  };
  for (int l = 0; l < L; ++l) {
    const BlockActs& a = acts.block(l);
    const std::string at = fmt::format("layer {}, ", l);
    add(l == 0 ? "the embedding's output" : at + "input (the residual stream)", a.x_in, R * C);
    add(at + "input_layernorm: 1/rms is 0 or not finite (the sum of squares overflowed)", a.rstd1, R, true);
    add(at + "input_layernorm output", a.ln1, R * C);
    add(at + "q/k/v projection (after RoPE)", a.qkv, N * size_t(w.Q));
    add(at + "attention output", a.att, N * size_t(w.A));
    add(at + "residual after attention (o_proj + input)", a.mid, R * C);
    add(at + "post_attention_layernorm: 1/rms is 0 or not finite (the sum of squares overflowed)", a.rstd2, R,
        true);
    add(at + "post_attention_layernorm output", a.ln2, R * C);
    add(at + "gate/up projection", a.mlp.gate_up, N * 2 * size_t(w.F));
    add(at + "SwiGLU output", a.mlp.h, N * size_t(w.F));
  }
  add(fmt::format("layer {} output (the residual stream)", L - 1), head.final_out(), R * C);
  add("final norm: 1/rms is 0 or not finite (the sum of squares overflowed)", head.final_rstd(), R, true);
  add("final norm output", head.final_ln(), R * C);
  c.push_back({"the loss (LM head and cross-entropy)", [loss] { return !std::isfinite(*loss); }});
  return c;
}

// Backward produces the head's gradient first and the embedding's last: the reverse of the layout.
std::vector<Check> gradient_checks(const ParamLayout& layout, const float* grads) {
  std::vector<Check> c;
  const auto& views = layout.views();
  for (auto it = views.rbegin(); it != views.rend(); ++it) {
    const float* g = grads + it->offset;
    const size_t n = it->numel;
    c.push_back({"the gradient of " + it->name, [g, n] { return any_nonfinite(g, n); }});
  }
  return c;
}

}  // namespace

std::string locate_nonfinite(Llama& model, ParamSource& params, const Comm* world, const int32_t* inputs,
                             const int32_t* targets, int micro_batches, int mb, int T, float grad_scale) {
  const ParamLayout& layout = model.layout();
  const int L = model.config().n_layers;
  const size_t N = size_t(mb) * T, R = model.boundary_floats(mb, T) / size_t(model.config().dim);
  // Every tensor kept (policy none), whatever the run's recompute policy: the scan needs them all.
  std::vector<BlockKind> kinds;
  for (int l = 0; l < L; ++l) kinds.push_back(layout.block_kind(l));
  Activations acts(model.widths(), kinds, int(N), int(R), Recompute::none, true);
  TrackedBuffer<float> grads(layout.total(), MemCategory::workspace);
  double loss = 0;
  std::vector<Check> checks = forward_checks(acts, acts, model.widths(), L, N, R, &loss);
  const size_t n_forward = checks.size();
  for (Check& g : gradient_checks(layout, grads.data())) checks.push_back(std::move(g));

  // Code of the first bad point: (micro-batch, position) then rank; INT64_MAX when none.
  const int rank = world ? world->rank() : 0, ranks = world ? world->size() : 1;
  int64_t code = INT64_MAX;
  for (int micro = 0; micro < micro_batches; ++micro) {
    const int32_t* in = inputs + size_t(micro) * N;
    const int32_t* tgt = targets + size_t(micro) * N;
    std::fill(grads.data(), grads.data() + grads.size(), 0.0f);
    FlatGrads sink(grads.data());
    // The steps of Llama::forward_backward, over activations this scan owns.
    model.embed(params, acts, in, int(N), 0);
    model.blocks_forward(params, acts, 0, L, acts.final_out(), mb, T, layout.head_segment());
    float* tied = nullptr;
    loss = model.head_forward_backward(params, sink, acts, tgt, int(N), grad_scale,
                                       layout.block_segment(L - 1), &tied);
    size_t first = checks.size();
    for (size_t i = 0; i < n_forward && first == checks.size(); ++i)
      if (checks[i].bad()) first = i;
    model.blocks_backward(params, sink, acts, 0, L, mb, T, layout.embedding_segment(), BackwardPart::all,
                          nullptr);
    model.embedding_backward(sink, tied, in, int(N));
    for (size_t i = n_forward; i < checks.size() && first == checks.size(); ++i)
      if (checks[i].bad()) first = i;
    if (first < checks.size() && code == INT64_MAX)
      code = (int64_t(micro) * int64_t(checks.size()) + int64_t(first)) * ranks + rank;
  }
  // Every rank runs every micro-batch even after it found its point: the model's collectives (tp
  // hooks, ZeRO-3 gathers) must stay matched across ranks.
  if (world && world->size() > 1) world->all_reduce(&code, 1, ReduceOp::min);
  if (code == INT64_MAX)
    return "no activation or gradient of this step was non-finite when re-run (a transient fault, or "
           "replicas "
           "that differ)";
  const int64_t who = code % ranks, pos = code / ranks;
  const int64_t micro = pos / int64_t(checks.size()), at = pos % int64_t(checks.size());
  return fmt::format("micro-batch {}, {}, on rank {}", micro, checks[size_t(at)].label, who);
}

double LossSpikeWatch::observe(double loss) {
  double median = 0;
  if (factor_ > 0 && !recent_.empty() && std::isfinite(loss)) {
    std::vector<double> sorted(recent_.begin(), recent_.end());
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    median = sorted[sorted.size() / 2];
    if (!(loss > factor_ * median)) median = 0;
  }
  // A spike is not added: the median stays that of the healthy steps.
  if (median == 0 && std::isfinite(loss)) {
    recent_.push_back(loss);
    if (recent_.size() > 20) recent_.pop_front();
  }
  return median;
}

std::string SkipBudget::record(bool skipped) {
  ++steps_;
  skipped_ += skipped;
  in_a_row_ = skipped ? in_a_row_ + 1 : 0;
  if (in_a_row_ >= kMaxInARow)
    return fmt::format("{} steps in a row were skipped (on_nonfinite = skip stops the run at {} in a row)", in_a_row_,
                       kMaxInARow);
  if (steps_ >= kMinSteps && 2 * skipped_ > steps_)
    return fmt::format("{} of the {} steps this run took were skipped (on_nonfinite = skip stops the run when more "
                       "than half are)", skipped_, steps_);
  return "";
}

}  // namespace ff
