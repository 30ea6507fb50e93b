#include "parallel/tensor/tp_checkpoint.h"

#include <algorithm>
#include <stdexcept>

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

void extract_local_tensors(const ParamLayout& local_layout, const ParamLayout& full_layout,
                           const float* full, float* local) {
  for (size_t i = 0; i < local_layout.views().size(); ++i) {
    const ParamView& v = local_layout.views()[i];
    const float* src = full + full_layout.views()[i].offset;
    for (size_t e = 0; e < v.numel; ++e) local[v.offset + e] = src[v.full_index(e)];
  }
}

}  // namespace ff
