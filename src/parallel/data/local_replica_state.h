#pragma once
// The common part of the data-parallel modes whose replicas step on their own gradients
// (local SGD, DiLoCo, async): a ReplicatedState whose gradient sink communicates nothing, so
// backward never waits on another replica; each mode decides what the replicas exchange and
// when. One dense group holding the whole layout (tp = pp = cp = 1, no experts, ZeRO 0).
#include <memory>

#include "core/memory.h"
#include "parallel/data/replicated_state.h"
#include "parallel/data/sgd_displacement.h"
#include "parallel/model_state.h"

namespace ff {

class LocalReplicaState : public ModelState {
 public:
  // local_mean: rescale the gradient to this replica's own batch mean (the trainer scales by
  // 1/global batch, right when the ranks' gradients are summed; local steps sum nothing).
  // model: the layout parameters are initialised from (null: filled through checkpoint_runs, then after_load).
  LocalReplicaState(const ParamGroupSpec& spec, const ParamLayout* model, const AdamWConfig& adam,
                    const DataParallelConfig& cfg, Tracer* tracer, bool local_mean);
  ParamSource& params() override { return inner_->params(); }
  GradSink& grads(bool sync) override { return inner_->grads(sync); }
  void zero_grads() override { inner_->zero_grads(); }
  void finish_grads() override;
  // This replica's own gradient: every rank's differs, so nothing is summed across dp.
  double grad_square_sum(const std::vector<WeightedRange>& weights) override {
    return inner_->grad_square_sum(weights);
  }
  bool grads_accumulate() const override { return true; }
  void scale_grads(float s) override { inner_->scale_grads(s); }
  void optimizer_step(float lr, int step) override;
  void init_parameters(const ModelConfig& c, uint64_t seed) override;
  // A checkpoint holds rank 0's replica: at the end of a round every replica holds the same.
  void gather_full(float* params, float* m, float* v) override { inner_->gather_full(params, m, v); }
  // The one dense group covers the whole layout in model order: its coordinates are the model's.
  StateRuns checkpoint_runs(bool for_save) override { return inner_->checkpoint_runs(for_save); }
  void after_load() override {
    inner_->after_load();
    parameters_set();
  }
  float* segment_grads(const ParamSegment& seg, size_t* count) override {
    return inner_->segment_grads(seg, count);
  }

 protected:
  // Called after each local optimizer step (step: the trainer's, 1-based) and after the
  // parameters were set from outside (init, load).
  virtual void after_local_step(int step) = 0;
  virtual void on_parameters_set() {}
  // optimizer = sgd in a mode that averages after H local steps: the steps are carried as a
  // displacement from round_start() (sgd_displacement.h); null with AdamW and in async.
  SgdDisplacement* sgd() { return sgd_.get(); }
  virtual const float* round_start() { return nullptr; }
  float* param_data() { return inner_->param_data(); }
  float* grad_data() { return inner_->grad_data(); }
  size_t size() const { return layout_->total(); }
  const Comm& dp() const { return *dp_; }
  ReplicatedState& inner() { return *inner_; }
  const DpModeConfig& mode() const { return mode_; }

 private:
  void parameters_set();  // init or load: a new round starts, then on_parameters_set()

  std::unique_ptr<GroupLayout> layout_;  // the inner state keeps a reference: fixed address
  const Comm* dp_;
  DpModeConfig mode_;
  bool local_mean_;
  std::unique_ptr<ReplicatedState> inner_;
  std::unique_ptr<SgdDisplacement> sgd_;
};

// The state of a mode other than sync, after checking that the layout allows it.
std::unique_ptr<ModelState> make_dp_mode_state(const std::vector<ParamGroupSpec>& groups,
                                               const ParamLayout& model, const AdamWConfig& adam,
                                               const DataParallelConfig& cfg, Tracer* tracer);
// The mode's state of one group (model: null when the caller loads the parameters; toys do).
std::unique_ptr<ModelState> make_dp_mode_group_state(const ParamGroupSpec& spec, const ParamLayout* model,
                                                     const AdamWConfig& adam, const DataParallelConfig& cfg,
                                                     Tracer* tracer);

}  // namespace ff
