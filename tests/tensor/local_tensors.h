#pragma once
// The tests' way to give a tp rank the same weights as a serial model: its blocks cut out of the
// serial model's flat buffer.
#include "model/parameters.h"

namespace ff::testing {

// This rank's blocks (local_layout, sliced for it) out of a full flat buffer (full_layout).
inline void extract_local_tensors(const ParamLayout& local_layout, const ParamLayout& full_layout,
                                  const float* full, float* local) {
  for (size_t i = 0; i < local_layout.views().size(); ++i) {
    const ParamView& v = local_layout.views()[i];
    const float* src = full + full_layout.views()[i].offset;
    for (size_t e = 0; e < v.numel; ++e) local[v.offset + e] = src[v.full_index(e)];
  }
}

}  // namespace ff::testing
