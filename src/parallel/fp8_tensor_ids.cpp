#include "parallel/fp8_tensor_ids.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

namespace ff {

Fp8TensorIds::Fp8TensorIds(const ParamLayout& local, const ParamLayout& whole) {
  std::map<std::string, int64_t> index;
  for (const ParamView& v : whole.views()) {
    index.emplace(v.name, int64_t(names_.size()));
    names_.push_back(v.name);
  }
  for (const ParamView& v : local.views()) {
    auto it = index.find(v.name);
    if (it == index.end())
      throw std::logic_error("fp8 tensor ids: '" + v.name + "' is not in the whole model");
    starts_.emplace_back(v.offset, it->second);
  }
  std::sort(starts_.begin(), starts_.end());
}

int64_t Fp8TensorIds::id_of_name(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  return it == names_.end() ? -1 : int64_t(it - names_.begin());
}

void Fp8TensorIds::note(const ParamSegment& seg, const void* data) {
  if (!data || seg.count == 0) return;
  const char* b = static_cast<const char*>(data);
  const Range r{b, b + seg.count * sizeof(float), seg.offset};
  // A buffer now holding another segment replaces what it held (ranges never overlap).
  std::erase_if(ranges_, [&](const Range& o) { return o.begin < r.end && r.begin < o.end; });
  ranges_.push_back(r);
}

int64_t Fp8TensorIds::id_of(const void* p) const {
  const char* c = static_cast<const char*>(p);
  for (const Range& r : ranges_) {
    if (c < r.begin || c >= r.end) continue;
    const size_t flat = r.flat + size_t(c - r.begin) / sizeof(float);
    auto it = std::upper_bound(starts_.begin(), starts_.end(), std::make_pair(flat, INT64_MAX));
    if (it != starts_.begin()) return std::prev(it)->second;
    break;
  }
  std::ostringstream os;
  os << "fp8: a GEMM weight at " << p << " lies in no parameter or gradient segment the model acquired";
  throw std::logic_error(os.str());
}

namespace {

class NotingSource final : public ParamSource {
 public:
  NotingSource(ModelState& state, Fp8TensorIds& ids) : state_(state), ids_(ids) {}
  ConstTypedPtr acquire(const ParamSegment& seg, const ParamSegment& next) override {
    const ConstTypedPtr p = state_.params().acquire(seg, next);
    ids_.note(seg, p.data());
    return p;
  }
  void release(const ParamSegment& seg) override { state_.params().release(seg); }

 private:
  ModelState& state_;
  Fp8TensorIds& ids_;
};

class NotingSink final : public GradSink {
 public:
  explicit NotingSink(Fp8TensorIds& ids) : ids_(ids) {}
  GradSink* inner = nullptr;
  TypedPtr acquire(const ParamSegment& seg) override {
    const TypedPtr p = inner->acquire(seg);
    ids_.note(seg, p.data());
    return p;
  }
  void release(const ParamSegment& seg) override { inner->release(seg); }

 private:
  Fp8TensorIds& ids_;
};

class NotingState final : public ModelState {
 public:
  NotingState(std::unique_ptr<ModelState> inner, Fp8TensorIds& ids)
      : s_(std::move(inner)), params_(*s_, ids), grads_{NotingSink(ids), NotingSink(ids)} {}
  ParamSource& params() override { return params_; }
  // One sink per flag: a pipeline may hold a micro-batch's sink while asking for the last one's.
  GradSink& grads(bool sync) override {
    NotingSink& g = grads_[sync];
    g.inner = &s_->grads(sync);
    return g;
  }
  void zero_grads() override { s_->zero_grads(); }
  void finish_grads() override { s_->finish_grads(); }
  double grad_square_sum(const std::vector<WeightedRange>& w) override { return s_->grad_square_sum(w); }
  bool grads_accumulate() const override { return s_->grads_accumulate(); }
  void scale_grads(float s) override { s_->scale_grads(s); }
  void optimizer_step(float lr, int step) override { s_->optimizer_step(lr, step); }
  void init_parameters(const ModelConfig& c, uint64_t seed) override { s_->init_parameters(c, seed); }
  void gather_full(float* p, float* m, float* v) override { s_->gather_full(p, m, v); }
  void load_full(const float* p, const float* m, const float* v) override { s_->load_full(p, m, v); }
  StateRuns checkpoint_runs(bool for_save) override { return s_->checkpoint_runs(for_save); }
  void after_load() override { s_->after_load(); }
  float* segment_grads(const ParamSegment& seg, size_t* n) override { return s_->segment_grads(seg, n); }
  bool lockstep() const override { return s_->lockstep(); }
  bool applies_gradient() const override { return s_->applies_gradient(); }
  std::vector<std::pair<std::string, float*>> extra_state() override { return s_->extra_state(); }
  std::vector<const WeightTwinSource*> weight_twins() const override { return s_->weight_twins(); }

 private:
  std::unique_ptr<ModelState> s_;
  NotingSource params_;
  NotingSink grads_[2];
};

}  // namespace

std::unique_ptr<ModelState> note_fp8_segments(std::unique_ptr<ModelState> inner, Fp8TensorIds& ids) {
  return std::make_unique<NotingState>(std::move(inner), ids);
}

}  // namespace ff
