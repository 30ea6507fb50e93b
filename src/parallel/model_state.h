#pragma once
// One rank's share of the model state (parameters, gradients, AdamW moments) and the
// communication that keeps the ranks consistent. The trainer drives every layout through this
// one interface; the model sees only the ParamSource/GradSink it hands out. The state the trainer
// holds is a set of per-parameter-group states (grouped_state.h), each one of these layouts over
// its group's communicator:
//
//   zero 0 (ReplicatedState): everything replicated; gradients all-reduced in buckets that start
//          as soon as backward finishes writing them (DDP).
//   zero 1/2/3 (ShardedState): AdamW moments / + gradients / + parameters sharded across the
//          group's ranks (ZeRO, Rajbhandari et al. 2020; stage 3 is FSDP).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/weight_twins.h"
#include "model/param_access.h"
#include "model/parameters.h"
#include "parallel/data/dp_mode.h"
#include "parallel/optimizer.h"
#include "parallel/param_group.h"

namespace ff {

class Comm;
class Mesh;
class Tracer;

// When DDP's all-reduces run: overlapped with backward (the point of buckets), all after
// backward (to measure what overlap saves), or never (benchmarks only: replicas drift apart).
enum class GradSync { overlap, after_backward, none };
const EnumTable<GradSync>& grad_sync_names();
inline const char* grad_sync_name(GradSync g) { return grad_sync_names().name(g); }

struct DataParallelConfig {
  int zero = 0;              // ZeRO stage 0..3
  double bucket_mb = 4.0;    // DDP bucket size (zero 0)
  GradSync sync = GradSync::overlap;
  DpModeConfig mode;         // sync (DDP/ZeRO), or replicas that step on their own (dp_mode.h)
  DType gather_dtype = DType::f32;  // ZeRO-3's parameter all-gathers (a 16-bit run's GEMM dtype)
  DType grad_reduce = DType::f32;  // the dtype gradients are reduced in (grad_wire.h)
};

// A run of the model's flat layout and where this rank keeps it: how a sharded checkpoint sees
// one of the state's buffers without gathering anything.
struct StateRun {
  size_t flat = 0, count = 0;  // elements [flat, flat + count) of the model's flat layout
  float* data = nullptr;
};
struct StateRuns {
  std::vector<StateRun> params, m, v;  // ascending by flat
};

class ModelState {
 public:
  virtual ~ModelState() = default;
  virtual ParamSource& params() = 0;
  // sync: this is the step's last micro-batch, so gradients are communicated as they complete.
  virtual GradSink& grads(bool sync) = 0;
  virtual void zero_grads() = 0;
  // Waits for this step's gradient communication; afterwards grads hold the global sum.
  virtual void finish_grads() = 0;
  // Sum over each group's ranks of the squares of the summed gradient, each element times
  // its weight (1 outside `weights`; a grouped state also weights its groups' replicas).
  virtual double grad_square_sum(const std::vector<WeightedRange>& weights) = 0;
  // Whether the buffers grads() hands out keep the earlier micro-batches' sum (zero 0, 1)
  // rather than this micro-batch's alone (the staging buffers of zero 2, 3).
  virtual bool grads_accumulate() const = 0;
  virtual void scale_grads(float s) = 0;
  virtual void optimizer_step(float lr, int step) = 0;
  // Initial weights from the deterministic initializer (each rank fills what it holds).
  virtual void init_parameters(const ModelConfig& c, uint64_t seed) = 0;
  // The full, unsharded state gathered to rank 0 (others may pass null): for tests and inspection;
  // checkpoints never gather (checkpoint_runs below).
  virtual void gather_full(float* params, float* m, float* v) = 0;
  // Sharded checkpoints. for_save: the runs this rank writes, so that the ranks of a group write
  // each element of its state exactly once (a replicated group's first rank; a ZeRO chunk's
  // owner). Otherwise every run this rank holds, which a load must fill; then call after_load.
  virtual StateRuns checkpoint_runs(bool for_save) = 0;
  virtual void after_load() {}
  // The part of segment `seg`'s summed gradient this rank holds after finish_grads (all of it,
  // or its ZeRO chunk), and its length: for sums across other groups (tied embeddings).
  virtual float* segment_grads(const ParamSegment& seg, size_t* count) = 0;
  // False when a step must not wait on the other data-parallel replicas (async with staleness):
  // the trainer then reports this replica's own loss instead of all-reducing it every step.
  virtual bool lockstep() const { return true; }
  // After finish_grads: whether this step's optimizer_step applies a gradient. False for async
  // DP's steps before its first delayed gradient arrives (from the start, and again after a
  // resume): their gradient is zeros by design, which the non-finite guard must not take for a
  // dead model.
  virtual bool applies_gradient() const { return true; }
  // Full-size tensors a checkpoint keeps beyond parameters and AdamW moments, by section name
  // (DiLoCo's outer state); the same on every rank.
  virtual std::vector<std::pair<std::string, float*>> extra_state() { return {}; }
  // The 16-bit twins of the parameters this state itself keeps for the model's GEMMs (ZeRO-3's
  // 16-bit gathers: parallel/zero/gather_pool.h), for the trainer's GEMM context; none by default.
  virtual std::vector<const WeightTwinSource*> weight_twins() const { return {}; }
};

// The model's parameter groups (param_group.h: dense over dp x cp, expert over edp) over `mesh`
// (null: one process), with the tensors several ranks hold whole (`replicas`: their gradients
// summed, their copies weighted in the norm; tensor_replicas.h has tensor parallelism's).
std::unique_ptr<ModelState> make_model_state(const ParamLayout& layout,
                                             const AdamWConfig& adam, const DataParallelConfig& cfg,
                                             const Mesh* mesh, Tracer* tracer,
                                             const std::vector<ReplicaRange>& replicas);

}  // namespace ff
