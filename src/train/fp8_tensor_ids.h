#pragma once
// fp8 delayed scaling keeps its scales per parameter tensor, step after step. The model hands each
// GEMM its weight's place in its (local) flat parameter layout (WeightRef::at,
// kernels/gemm_precision.h), whatever buffer holds the values (ZeRO-2/3's staging and gather
// buffers move); here that place is resolved to the tensor whose view holds it, named by its index
// among the whole model's tensors. The id is then the same in every layout (tp blocks, pipeline
// stages, ZeRO stages, experts on any ep rank), on every rank and in every run, so amaxes can be
// reduced by id and checkpointed by name.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/parameters.h"

namespace ff {

class Fp8TensorIds {
 public:
  // local: this rank's layout (tp blocks, stage, experts); whole: every tensor of the model
  // (ParamLayout of the unsliced config: all stages, all experts). An id is an index of whole.views().
  Fp8TensorIds(const ParamLayout& local, const ParamLayout& whole);
  int64_t count() const { return int64_t(names_.size()); }
  const std::string& name(int64_t id) const { return names_.at(size_t(id)); }
  // -1 if the whole model has no such tensor.
  int64_t id_of_name(const std::string& name) const;
  // The tensor whose view in the local layout holds element `at`; throws (naming it) for an
  // element outside the layout: a GEMM that is no linear layer of the model.
  int64_t id_at(int64_t at) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::pair<size_t, int64_t>> starts_;  // local view offset -> id, ascending
  size_t local_total_ = 0;
};

}  // namespace ff
