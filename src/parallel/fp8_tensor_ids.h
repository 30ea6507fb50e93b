#pragma once
// fp8 delayed scaling needs to know which parameter tensor a GEMM's weight is (its scales are that
// tensor's, step after step), but a GEMM sees only a pointer, and under ZeRO-2/3 the pointer moves:
// gradients land in alternating staging buffers, parameters in whichever gather buffer is free.
// The model reaches every weight through ParamSource/GradSink::acquire of a segment, so the state
// the model is handed notes each acquired segment's address (Fp8NotingState), and a pointer is
// resolved to the tensor whose view holds it in the layout, named by its index among the whole
// model's tensors. The id is then the same in every layout (tp blocks, pipeline stages, ZeRO
// stages, experts on any ep rank), on every rank and in every run, so amaxes can be reduced by id
// and checkpointed by name.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallel/model_state.h"

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
  // Segment `seg` of the local layout lives at `data` (fp32) until noted elsewhere.
  void note(const ParamSegment& seg, const void* data);
  // The tensor a pointer into a noted segment belongs to; throws (naming the address) otherwise.
  int64_t id_of(const void* p) const;

 private:
  struct Range {
    const char* begin;
    const char* end;
    size_t flat;  // the local layout's offset of begin
  };
  std::vector<std::string> names_;
  std::vector<std::pair<size_t, int64_t>> starts_;  // local view offset -> id, ascending
  std::vector<Range> ranges_;
};

// `inner` with every segment the model acquires (parameters and gradients) noted in `ids`; all else
// forwarded unchanged.
std::unique_ptr<ModelState> note_fp8_segments(std::unique_ptr<ModelState> inner, Fp8TensorIds& ids);

}  // namespace ff
