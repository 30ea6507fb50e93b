#include "train/dp_mode_config.h"

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace ff {

namespace {
[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error("config: " + msg); }

double lr_factor(const TrainConfig& c) {
  if (c.lr_scaling == LrScaling::none) return 1.0;
  const double ratio = double(c.global_batch()) / c.lr_reference_batch;
  return c.lr_scaling == LrScaling::linear ? ratio : std::sqrt(ratio);
}
}  // namespace

DpModeConfig dp_mode_config(const TrainConfig& c) {
  DpModeConfig m;
  m.mode = c.dp_mode;
  m.sync_every = c.sync_every;
  m.outer_lr = c.outer_lr;
  m.outer_momentum = c.outer_momentum;
  m.pseudo_grad = c.diloco_pseudo_grad_dtype;
  m.max_staleness = c.max_staleness;
  return m;
}

void validate_dp_mode_config(const TrainConfig& c) {
  const DpModeConfig m = dp_mode_config(c);
  const char* mode = dp_mode_name(m.mode);
  const bool periodic = m.mode == DpMode::local_sgd || m.mode == DpMode::diloco;
  if (c.sync_every < 1) fail(fmt::format("sync_every must be >= 1 (got {})", c.sync_every));
  if (c.sync_every != 1 && !periodic)
    fail(fmt::format("sync_every = {} is used only by dp_mode = local_sgd or diloco (dp_mode is {})",
                     c.sync_every, mode));
  if (c.max_staleness < 0) fail(fmt::format("max_staleness must be >= 0 (got {})", c.max_staleness));
  if (c.max_staleness != 0 && m.mode != DpMode::async)
    fail(fmt::format("max_staleness = {} is used only by dp_mode = async (dp_mode is {})", c.max_staleness, mode));
  if (!(c.outer_lr > 0) || !std::isfinite(c.outer_lr))
    fail(fmt::format("outer_lr must be a positive number (got {})", c.outer_lr));
  if (!(c.outer_momentum >= 0 && c.outer_momentum < 1))
    fail(fmt::format("outer_momentum must be in [0, 1) (got {})", c.outer_momentum));
  if (m.pseudo_grad != DType::f32 && m.mode != DpMode::diloco)
    fail("diloco_pseudo_grad_dtype = bf16 is used only by dp_mode = diloco");
  if (m.mode != DpMode::sync) {
    if (c.dp == 1)
      fail(fmt::format("dp_mode = {} averages over data-parallel replicas and needs dp >= 2 (dp is 1); run "
                       "more ranks (mpirun -np 2) or set dp_mode = sync", mode));
    if (c.zero != 0)
      fail(fmt::format("dp_mode = {} keeps a whole optimizer state per replica and does not compose with "
                       "zero = {}; set zero = 0", mode, c.zero));
    if (c.tp != 1 || c.pp != 1 || c.cp != 1)
      fail(fmt::format("dp_mode = {} does not compose with tp = {}, pp = {}, cp = {} (their groups would "
                       "average replicas that never agreed); set them to 1 or use dp_mode = sync",
                       mode, c.tp, c.pp, c.cp));
    if (c.grad_sync != GradSync::overlap)
      fail(fmt::format("grad_sync = {} is a DDP benchmarking setting; with dp_mode = {} leave it at overlap",
                       grad_sync_name(c.grad_sync), mode));
  }
  if (c.lr_scaling != LrScaling::none && c.lr_reference_batch <= 0)
    fail(fmt::format("lr_scaling = {} needs lr_reference_batch > 0: the global batch (sequences per step) "
                     "that lr was tuned for", lr_scaling_names().name(c.lr_scaling)));
  if (c.lr_scaling == LrScaling::linear && c.warmup_steps == 0)
    fail("lr_scaling = linear needs a gradual warm-up (Goyal et al. 2017): set warmup_steps > 0");
  if (c.lr_reference_batch < 0) fail("lr_reference_batch must be >= 0");
  parse_straggler(c.simulate_straggler);
}

std::string describe_dp_mode(const TrainConfig& c) {
  switch (c.dp_mode) {
    case DpMode::local_sgd: return fmt::format("dp_mode local_sgd: parameters averaged every {} steps", c.sync_every);
    case DpMode::diloco:
      return fmt::format("dp_mode diloco: outer Nesterov step every {} inner steps, outer lr {}, momentum {}, "
                         "pseudo-gradient {}", c.sync_every, c.outer_lr, c.outer_momentum,
                         pseudo_grad_dtype_names().name(c.diloco_pseudo_grad_dtype));
    case DpMode::async:
      return fmt::format("dp_mode async: gradients applied {} steps late (max_staleness)", c.max_staleness);
    case DpMode::sync: break;
  }
  return "dp_mode sync";
}

void resolve_lr_scaling(TrainConfig& c) { c.scaled_lr = float(c.lr * lr_factor(c)); }

std::string describe_lr_scaling(const TrainConfig& c) {
  if (c.lr_scaling == LrScaling::none) return "";
  return fmt::format("lr {} x {:.4g} ({}: global batch {} / reference {}) = {}", c.lr, lr_factor(c),
                     lr_scaling_names().name(c.lr_scaling),
                     c.global_batch(), c.lr_reference_batch, c.scaled_lr);
}

Straggler parse_straggler(const std::string& text) {
  Straggler s;
  if (text.empty()) return s;
  const size_t colon = text.find(':');
  try {
    size_t used = 0;
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    s.rank = std::stoi(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("rank");
    const std::string f = text.substr(colon + 1);
    s.factor = std::stod(f, &used);
    if (used != f.size()) throw std::invalid_argument("factor");
  } catch (const std::exception&) {
    fail(fmt::format("simulate_straggler = '{}' must be RANK:FACTOR, e.g. 1:2 (rank 1 twice as slow)", text));
  }
  if (s.rank < 0 || !(s.factor >= 1) || !std::isfinite(s.factor))
    fail(fmt::format("simulate_straggler = '{}': RANK must be >= 0 and FACTOR >= 1", text));
  return s;
}

void straggle(const Straggler& s, int world_rank, double compute_seconds) {
  if (world_rank != s.rank || s.factor <= 1) return;
  std::this_thread::sleep_for(std::chrono::duration<double>((s.factor - 1) * compute_seconds));
}

}  // namespace ff
