#pragma once
// fp8 delayed scaling inside the model: Transformer Engine's default recipe (DelayedScaling with
// amax_history_len = 1024, margin = 0, amax_compute_algo = "max"). Every fp8 GEMM operand is a
// tensor with its own scale, scale = fp8_max / max(amax history) / 2^margin, computed only from
// the amaxes of the steps BEFORE the current one; what a step observes (the max over its
// micro-batches and recomputations) enters the history once, at end_step(). A tensor with no
// history yet uses scale 1, as TE initialises it.
//
// Identity: the model hands each GEMM its weight's parameter (WeightRef::at, gemm_precision.h:
// where the tensor starts in its flat parameter layout, whatever buffer holds it), so the three
// GEMMs of a linear layer, forward (x W^T), input gradient (dy W) and weight gradient (dy^T x),
// are keyed by that one parameter, as the tensor id the Identity gives for it. The trainer's
// identity (train/fp8_tensor_ids.h) names the parameter tensor by its index in the whole model,
// so ids are the same in every layout, on every rank and in every run; without one (tests of a
// bare GEMM), the id is `at` itself. end_step() can reduce the step's amaxes over the ranks first
// (max), as TE does over its amax-reduction group, so replicas keep equal scales.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "kernels/fp8.h"
#include "kernels/gemm_precision.h"

namespace ff {

class Fp8Recipe {
 public:
  // One scaled tensor: the parameter tensor `id`, the GEMM using it (`role`) and the operand
  // (0 = A, 1 = B). 6 per linear layer.
  struct Key {
    int64_t id = 0;
    int role = 0, operand = 0;
    auto operator<=>(const Key&) const = default;
  };
  // e5m2 for the gradient operand (A of dgrad and wgrad), e4m3 for the rest.
  static Fp8Format format_of(const Key& k);
  // A GEMM's parameter (WeightRef::at, gemm_precision.h) -> tensor id; ids meant for end_step's
  // reduction lie in [0, ids).
  using Identity = std::function<int64_t(int64_t param_at)>;
  // Reduces (max) a vector of amaxes in place over the ranks that must agree.
  using AmaxReduce = std::function<void(std::vector<float>&)>;

  explicit Fp8Recipe(int history = 1024, int margin = 0) : history_(history), margin_(margin) {}
  void set_identity(Identity id, int64_t ids) { identity_ = std::move(id), ids_ = ids; }
  // operand 0 = A, 1 = B of the GEMM with `role` of the layer whose weight is the parameter at
  // `param_at`: quantises x[0, n) in place with the tensor's current scale and records its amax
  // for this step (unless recording is off).
  void quantise(int64_t param_at, GemmRole role, int operand, Fp8Format f, float* x, size_t n);
  // Off: GEMMs use the current scales and record nothing (evaluation: held-out data must not
  // steer training's scales, and a resumed run must see the same histories).
  void set_recording(bool on) { recording_ = on; }
  // Once per optimizer step: every tensor seen this step records its amax, its scale moves. With
  // `reduce`, the amaxes are first reduced (max) as one vector of ids x 6 entries (-1: unused;
  // a non-finite amax travels as +inf), and a tensor used on any rank records the reduced value.
  void end_step(const AmaxReduce& reduce = {});

  // For tests: per tensor, the scale each step used and the amax each step recorded.
  struct Log {
    Fp8Format format;
    std::vector<float> scales, amaxes;  // one per step in which the tensor was used
  };
  std::vector<Log> logs() const;
  std::map<Key, Log> keyed_logs() const;
  size_t tensors() const { return slots_.size(); }
  // Checkpoints: every tensor's delayed-scaling state (Fp8DelayedScale::state), and back.
  std::map<Key, std::vector<float>> states() const;
  void restore(const Key& k, const std::vector<float>& state);

 private:
  struct Slot {
    Fp8DelayedScale scale;
    float pending = 0;  // this step's amax so far
    bool used = false;
    Log log;
  };
  Slot& slot(const Key& k, Fp8Format f);  // created with scale 1 on first use
  int history_, margin_;
  Identity identity_;
  int64_t ids_ = 0;
  bool recording_ = true;
  std::map<Key, Slot> slots_;
  // GEMMs run on the caller's thread, but a model may call from several.
  mutable std::mutex mu_;
};

}  // namespace ff
