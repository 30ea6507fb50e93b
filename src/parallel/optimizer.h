#pragma once
// AdamW over spans of a parameter group's flat layout. A span pairs a range of the parameters
// with the same-length range of the optimizer state (and of the gradients, which live in state coordinates): for a
// replicated model the two coincide; for a ZeRO shard the state is the rank's shard and the
// parameters are wherever the shard's elements sit.
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "core/memory.h"
#include "kernels/adamw.h"
#include "parallel/param_group.h"

namespace ff {

// optimizer = adamw | sgd. Plain SGD (with AdamW's decoupled weight decay) exists so that the
// local data-parallel modes can be checked bitwise against sync DP at H = 1: the mean
// of the replicas' AdamW steps is not the AdamW step of the mean gradient, the mean of SGD steps is.
enum class OptimizerKind { adamw, sgd };
const EnumTable<OptimizerKind>& optimizer_names();

struct AdamWConfig {
  float beta1, beta2, eps, weight_decay;
  OptimizerKind kind = OptimizerKind::adamw;  // sgd: beta1, beta2, eps unused; m and v stay 0
};

struct OptimSpan {
  size_t param_at;  // into the parameter buffer handed to step()
  size_t state_at;  // into m, v and the gradient buffer
  size_t count;
  bool decay;       // matrices decay, norms do not
};

// The spans of a whole, unsharded group: one per tensor, state coordinates = the group's.
std::vector<OptimSpan> full_group_spans(const GroupLayout& layout);

class AdamW {
 public:
  AdamW(std::vector<OptimSpan> spans, size_t state_size, AdamWConfig cfg);
  // step is 1-based (bias correction). With kind sgd, plain SGD.
  void step(float* params, const float* grads, float lr, int step);
  float* m() { return m_.data(); }
  float* v() { return v_.data(); }
  size_t size() const { return m_.size(); }
  const std::vector<OptimSpan>& spans() const { return spans_; }

 private:
  std::vector<OptimSpan> spans_;
  AdamWConfig cfg_;
  TrackedBuffer<float> m_, v_;
};

}  // namespace ff
