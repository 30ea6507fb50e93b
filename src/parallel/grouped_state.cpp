#include "parallel/grouped_state.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "comm/comm.h"
#include "parallel/data/replicated_state.h"
#include "parallel/zero/sharded_state.h"

namespace ff {

std::unique_ptr<ModelState> make_group_state(const GroupLayout& layout, const Comm* comm,
                                             const AdamWConfig& adam, const DataParallelConfig& cfg,
                                             Tracer* tracer) {
  if (cfg.zero == 0 || !comm || comm->size() == 1)
    return std::make_unique<ReplicatedState>(layout, adam, cfg, comm, tracer);
  return std::make_unique<ShardedState>(layout, adam, cfg.zero, *comm, tracer, cfg.gather_dtype, cfg.grad_reduce);
}

// The model reads segments in its own layout; each goes to its group's source. A prefetch hint
// for a segment of another group is dropped (that group's source prefetches on its own acquire).
class GroupedState::RoutedParams final : public ParamSource {
 public:
  explicit RoutedParams(GroupedState& s) : s_(s) {}
  ConstTypedPtr acquire(const ParamSegment& seg, const ParamSegment& next) override {
    const Where& w = s_.locate(seg);
    ParamSegment local_next{};
    if (next.count > 0)
      if (auto it = s_.where_.find(next.offset); it != s_.where_.end() && it->second.group == w.group)
        local_next = it->second.local;
    return s_.groups_[w.group].state->params().acquire(w.local, local_next);
  }
  void release(const ParamSegment& seg) override {
    const Where& w = s_.locate(seg);
    s_.groups_[w.group].state->params().release(w.local);
  }

 private:
  GroupedState& s_;
};

class GroupedState::RoutedGrads final : public GradSink {
 public:
  explicit RoutedGrads(GroupedState& s) : s_(s) {}
  void begin(bool sync) {
    sinks_.clear();
    for (size_t g = 0; g < s_.groups_.size(); ++g) sinks_.push_back(&s_.group_grads(g, sync));
  }
  TypedPtr acquire(const ParamSegment& seg) override {
    const Where& w = s_.locate(seg);
    return sinks_[w.group]->acquire(w.local);
  }
  void release(const ParamSegment& seg) override {
    const Where& w = s_.locate(seg);
    sinks_[w.group]->release(w.local);
  }

 private:
  GroupedState& s_;
  std::vector<GradSink*> sinks_;
};

GroupedState::GroupedState(const std::vector<ParamGroupSpec>& groups, const ParamLayout* model,
                           const AdamWConfig& adam, const DataParallelConfig& cfg, Tracer* tracer) {
  if (groups.empty()) throw std::invalid_argument("a model state needs at least one parameter group");
  for (size_t g = 0; g < groups.size(); ++g) {
    Group group{std::make_unique<GroupLayout>(groups[g], model), nullptr, nullptr, groups[g].norm_sum};
    group.state = make_group_state(*group.layout, groups[g].comm, adam, cfg, tracer);
    group.sum = std::make_unique<ReplicaSum>(*group.layout);
    if (group.sum->empty()) group.sum.reset();
    for (size_t i = 0; i < group.layout->segments().size(); ++i) {
      const ParamSegment& flat = group.layout->flat_segments()[i];
      if (!where_.emplace(flat.offset, Where{g, group.layout->segments()[i]}).second)
        throw std::invalid_argument("the segment at offset " + std::to_string(flat.offset) +
                                    " is in groups '" + groups_[where_[flat.offset].group].layout->name() +
                                    "' and '" + groups[g].name + "'; give every segment exactly one group");
    }
    if (g > 0 && group.state->grads_accumulate() != accumulate_)
      throw std::invalid_argument("parameter groups '" + groups[0].name + "' and '" + groups[g].name +
                                  "' would mix accumulated and per-micro-batch gradients (ZeRO " +
                                  std::to_string(cfg.zero) + " with a one-rank group); give every group "
                                  "more than one rank or use zero <= 1");
    accumulate_ = group.state->grads_accumulate();
    groups_.push_back(std::move(group));
  }
  routed_params_ = std::make_unique<RoutedParams>(*this);
  routed_grads_ = std::make_unique<RoutedGrads>(*this);
}

GroupedState::~GroupedState() = default;

const GroupedState::Where& GroupedState::locate(const ParamSegment& seg) const {
  auto it = where_.find(seg.offset);
  if (it == where_.end() || it->second.local.count != seg.count)
    throw std::logic_error("no parameter group holds the segment at offset " + std::to_string(seg.offset) +
                           " (" + std::to_string(seg.count) + " elements)");
  return it->second;
}

ParamSource& GroupedState::params() {
  if (single()) return groups_[0].state->params();
  return *routed_params_;
}

GradSink& GroupedState::group_grads(size_t g, bool sync) {
  Group& group = groups_[g];
  GradSink& inner = group.state->grads(sync);
  if (!group.sum) return inner;
  group.sum->begin(inner, !group.state->grads_accumulate() || sync);
  return *group.sum;
}

GradSink& GroupedState::grads(bool sync) {
  if (single()) return group_grads(0, sync);
  routed_grads_->begin(sync);
  return *routed_grads_;
}

void GroupedState::zero_grads() {
  for (Group& g : groups_) g.state->zero_grads();
}

void GroupedState::finish_grads() {
  for (Group& g : groups_) g.state->finish_grads();
}

double GroupedState::grad_square_sum(const std::vector<WeightedRange>& weights) {
  if (single()) {  // group and flat coordinates coincide: the ranges go through uncut
    std::vector<WeightedRange> all = groups_[0].layout->norm_weights();
    all.insert(all.end(), weights.begin(), weights.end());
    return groups_[0].state->grad_square_sum(all);
  }
  double sq = 0;
  for (Group& g : groups_) {
    // The group's replica weights, then the weighted ranges cut to its segments, in its coordinates.
    const GroupLayout& l = *g.layout;
    std::vector<WeightedRange> local = l.norm_weights();
    for (const WeightedRange& w : weights)
      for (size_t i = 0; i < l.segments().size(); ++i) {
        const ParamSegment& f = l.flat_segments()[i];
        const size_t lo = std::max(w.offset, f.offset), hi = std::min(w.offset + w.count, f.end());
        if (lo < hi) local.push_back({l.segments()[i].offset + (lo - f.offset), hi - lo, w.weight});
      }
    double group_sq = g.state->grad_square_sum(local);  // each summed over its own group of ranks
    if (g.norm_sum) g.norm_sum->all_reduce(&group_sq, 1);
    sq += group_sq;
  }
  return sq;
}

void GroupedState::scale_grads(float s) {
  for (Group& g : groups_) g.state->scale_grads(s);
}

void GroupedState::optimizer_step(float lr, int step) {
  for (Group& g : groups_) g.state->optimizer_step(lr, step);
}

void GroupedState::init_parameters(const ModelConfig& c, uint64_t seed) {
  for (Group& g : groups_) g.state->init_parameters(c, seed);
}

void GroupedState::scatter_to_flat(size_t g, const float* local, float* flat) const {
  const GroupLayout& l = *groups_[g].layout;
  for (size_t i = 0; i < l.segments().size(); ++i)
    std::memcpy(flat + l.flat_segments()[i].offset, local + l.segments()[i].offset,
                l.segments()[i].count * sizeof(float));
}

void GroupedState::gather_full(float* params, float* m, float* v) {
  if (single()) return groups_[0].state->gather_full(params, m, v);
  for (size_t g = 0; g < groups_.size(); ++g) {
    const size_t n = groups_[g].layout->total();
    std::vector<float> p(n), gm(n), gv(n);
    groups_[g].state->gather_full(p.data(), gm.data(), gv.data());
    if (params) scatter_to_flat(g, p.data(), params);
    if (m) scatter_to_flat(g, gm.data(), m);
    if (v) scatter_to_flat(g, gv.data(), v);
  }
}

std::vector<const WeightTwinSource*> GroupedState::weight_twins() const {
  std::vector<const WeightTwinSource*> twins;
  for (const Group& g : groups_)
    for (const WeightTwinSource* t : g.state->weight_twins()) twins.push_back(t);
  return twins;
}

StateRuns GroupedState::checkpoint_runs(bool for_save) {
  if (single()) return groups_[0].state->checkpoint_runs(for_save);
  StateRuns out;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const GroupLayout& l = *groups_[g].layout;
    const StateRuns r = groups_[g].state->checkpoint_runs(for_save);
    auto to_flat = [&](const std::vector<StateRun>& local, std::vector<StateRun>& flat) {
      for (const StateRun& run : local)
        for (size_t i = 0; i < l.segments().size(); ++i) {
          const ParamSegment& s = l.segments()[i];
          const size_t lo = std::max(run.flat, s.offset);
          const size_t hi = std::min(run.flat + run.count, s.offset + s.count);
          if (lo < hi)
            flat.push_back({l.flat_segments()[i].offset + (lo - s.offset), hi - lo, run.data + (lo - run.flat)});
        }
    };
    to_flat(r.params, out.params);
    to_flat(r.m, out.m);
    to_flat(r.v, out.v);
  }
  for (auto* runs : {&out.params, &out.m, &out.v})
    std::sort(runs->begin(), runs->end(),
              [](const StateRun& a, const StateRun& b) { return a.flat < b.flat; });
  return out;
}

void GroupedState::after_load() {
  for (Group& g : groups_) g.state->after_load();
}

float* GroupedState::segment_grads(const ParamSegment& seg, size_t* count) {
  const Where& w = locate(seg);
  return groups_[w.group].state->segment_grads(w.local, count);
}

}  // namespace ff
