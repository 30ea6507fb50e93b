#pragma once
// The model state as a set of per-group states (param_group.h): each group is replicated (DDP) or
// ZeRO-sharded over its own communicator, in its own coordinates. The ParamSource and GradSink
// handed to the model take segments in the model's flat layout and route each to its group. One
// group holding the whole layout in order (a dense model's run) needs no routing: its own source
// and sink are handed out, so nothing changes on the hot path. A rank holding MoE blocks has two
// groups, dense and expert, and routes.
#include <map>
#include <memory>
#include <vector>

#include "parallel/model_state.h"
#include "parallel/param_group.h"
#include "parallel/replica_sum.h"

namespace ff {

class GroupedState final : public ModelState {
 public:
  // model: the layout the groups' parameters are initialised from (null: filled through checkpoint_runs, then after_load).
  GroupedState(const std::vector<ParamGroupSpec>& groups, const ParamLayout* model, const AdamWConfig& adam,
               const DataParallelConfig& cfg, Tracer* tracer);
  ~GroupedState() override;
  ParamSource& params() override;
  GradSink& grads(bool sync) override;
  void zero_grads() override;
  void finish_grads() override;
  // Each group's replica weights (GroupLayout::norm_weights), then `weights`.
  double grad_square_sum(const std::vector<WeightedRange>& weights) override;
  bool grads_accumulate() const override { return accumulate_; }
  void scale_grads(float s) override;
  void optimizer_step(float lr, int step) override;
  void init_parameters(const ModelConfig& c, uint64_t seed) override;
  void gather_full(float* params, float* m, float* v) override;
  // Each group's runs, cut at its segments' ends and moved to the model's flat coordinates.
  StateRuns checkpoint_runs(bool for_save) override;
  std::vector<const WeightTwinSource*> weight_twins() const override;  // every group's
  void after_load() override;
  float* segment_grads(const ParamSegment& seg, size_t* count) override;

  size_t group_count() const { return groups_.size(); }
  ModelState& group_state(size_t i) { return *groups_[i].state; }
  const GroupLayout& group_layout(size_t i) const { return *groups_[i].layout; }

 private:
  struct Group {
    std::unique_ptr<GroupLayout> layout;  // the state holds a reference: keep its address
    std::unique_ptr<ModelState> state;
    std::unique_ptr<ReplicaSum> sum;  // null: no replica gradient to sum
    const Comm* norm_sum = nullptr;   // ParamGroupSpec::norm_sum
  };
  struct Where {
    size_t group;
    ParamSegment local;
  };
  class RoutedParams;
  class RoutedGrads;
  // The group and group coordinates of a segment of the model's layout; throws if none holds it.
  const Where& locate(const ParamSegment& seg) const;
  bool single() const { return groups_.size() == 1 && groups_[0].layout->identity(); }
  // Group g's sink for this micro-batch (behind its replica sum, if any).
  GradSink& group_grads(size_t g, bool sync);
  // A group's full state into the model's flat buffers (gather_full).
  void scatter_to_flat(size_t g, const float* local, float* flat) const;

  std::vector<Group> groups_;
  std::map<size_t, Where> where_;  // by flat offset
  bool accumulate_ = true;
  std::unique_ptr<RoutedParams> routed_params_;
  std::unique_ptr<RoutedGrads> routed_grads_;
};

// One group's state: replicated (zero 0, or a one-rank group) or ZeRO-sharded over layout's comm.
std::unique_ptr<ModelState> make_group_state(const GroupLayout& layout, const Comm* comm,
                                             const AdamWConfig& adam, const DataParallelConfig& cfg,
                                             Tracer* tracer);

}  // namespace ff
