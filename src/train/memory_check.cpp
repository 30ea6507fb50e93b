#include "train/memory_check.h"

#include <stdexcept>

#include "plan/memory_fit.h"

namespace ff {

LayoutSpec layout_of(const TrainConfig& c) {
  LayoutSpec L;
  L.dp = c.dp, L.tp = c.tp, L.pp = c.pp, L.cp = c.cp, L.ep = c.ep, L.sp = c.sp;
  L.cp_comm = c.cp_comm;
  L.gemm = c.precision;  // bf16 keeps activations and a weight copy in 16 bits
  L.schedule = c.schedule, L.chunks = c.chunks;
  L.micro_batch = c.micro_batch, L.grad_accum = c.grad_accum;
  L.zero = c.zero, L.recompute = c.recompute;
  L.dp_mode = c.dp_mode, L.pseudo_grad = c.diloco_pseudo_grad_dtype;
  return L;
}

MemoryCheck check_memory_fits(const TrainConfig& c) {
  const LayoutSpec L = layout_of(c);
  const EngineHost host = this_engine_host(c.threads, c.packed_weights);
  MemoryCheck r;
  r.estimate = estimate_peak_memory(c.model, L, host);
  const int64_t available = machine_available_bytes();
  const int local = ranks_on_this_machine();
  if (available <= 0) {  // nothing to compare with (no /proc): say so rather than guess
    r.line = "memory per rank (estimated): " + r.estimate.describe() + " (available memory unknown)";
    return r;
  }
  r.line = describe_memory_budget(r.estimate, available, local);
  const int64_t budget = available / local;
  if (r.estimate.peak() <= budget) return r;
  const auto fits = suggest_fitting_layout(c.model, L, budget, host);
  const int64_t fit_bytes = fits ? estimate_peak_memory(c.model, *fits, host).peak() : 0;
  throw std::runtime_error(memory_refusal(r.estimate, available, local, fits, fit_bytes));
}

}  // namespace ff
