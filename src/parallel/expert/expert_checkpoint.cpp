#include "parallel/expert/expert_checkpoint.h"

#include <stdexcept>

#include "parallel/pipeline/pipeline_stages.h"

namespace ff {

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

void extract_experts(const ParamLayout& all_layout, const float* all, const ParamLayout& local_layout,
                     float* local) {
  copy_views_by_name(all_layout, all, local_layout, local);
}

}  // namespace ff
