#include "ckpt/full_tensors.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/tensor/tensor_plan.h"

namespace ff {

void assemble_full_tensors(const Comm& tp, const ModelConfig& c, const ParamLayout& local_layout,
                           const float* local, float* full, const ModelParts* parts) {
  const size_t n = local_layout.total(), t = size_t(tp.size());
  std::vector<float> all(n * t);
  tp.all_gather(local, all.data(), n * t);
  const ParamLayout full_layout(c, nullptr, parts);
  for (int r = 0; r < tp.size(); ++r) {
    const PlanSlicer slicer(c, tp.size(), r);
    const ParamLayout theirs(c, &slicer, parts);
    const float* src = all.data() + size_t(r) * n;
    for (size_t i = 0; i < theirs.views().size(); ++i) {
      const ParamView& v = theirs.views()[i];
      float* dst = full + full_layout.views()[i].offset;
      for (size_t e = 0; e < v.numel; ++e) dst[v.full_index(e)] = src[v.offset + e];
    }
  }
}

void copy_views_by_name(const ParamLayout& from, const float* src, const ParamLayout& to, float* dst) {
  for (const ParamView& v : to.views())
    for (const ParamView& w : from.views())
      if (w.name == v.name) {
        if (w.numel != v.numel) throw std::logic_error("copy_views_by_name: " + v.name + " differs in size");
        std::copy(src + w.offset, src + w.offset + w.numel, dst + v.offset);
      }
}

void assemble_stages(const Comm& pipe, const ModelConfig& c, const StageSplit& split, const float* mine,
                     float* full) {
  const ParamLayout whole(c);
  for (int r = 0; r < pipe.size(); ++r) {
    const ModelParts parts = parts_of_rank(split, r);
    const ParamLayout theirs(c, nullptr, &parts);
    std::vector<float> buf(theirs.total());
    if (r == pipe.rank()) std::copy(mine, mine + buf.size(), buf.begin());
    pipe.broadcast(buf.data(), buf.size(), r);
    copy_views_by_name(theirs, buf.data(), whole, full);
  }
}

void assemble_experts(const Comm& ep, const ParamLayout& local_layout, const float* local,
                      const ParamLayout& all_layout, float* all) {
  copy_views_by_name(local_layout, local, all_layout, all);  // the dense tensors (and own experts)
  for (int l = 0; l < all_layout.n_blocks(); ++l) {
    const ParamSegment mine = local_layout.expert_segment(l), whole = all_layout.expert_segment(l);
    if (whole.count == 0) continue;
    if (mine.count * size_t(ep.size()) != whole.count)
      throw std::logic_error("assemble_experts: block " + std::to_string(l) + " holds " +
                             std::to_string(mine.count) + " expert floats, not 1/ep of " + std::to_string(whole.count));
    ep.all_gather(local + mine.offset, all + whole.offset, whole.count);
  }
}

}  // namespace ff
