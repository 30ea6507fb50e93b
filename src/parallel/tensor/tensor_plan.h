#pragma once
// The tensor-parallel plan of the LLaMA model (principle 6, docs/principles.md; torchtitan's
// parallelize_llama): a table from parameter names to Megatron styles, and the slicer that turns
// it into the block of each tensor a rank holds. The model is built from the slicer's layout and
// never learns which style a tensor has.
//
//   style       tensors                         rank r of t holds
//   column      q, gate, up (and k, v)          rows [r*out/t, (r+1)*out/t): its heads / FFN units
//   row         o, down                         columns [r*in/t, (r+1)*in/t)
//   vocab       embedding, LM head              vocabulary rows [r*V/t, (r+1)*V/t)
//   replicated  the RMSNorm weights             everything
// With fewer key/value heads than ranks, each kv head is replicated on the t/Hkv ranks whose
// query heads read it (Megatron's GQA rule); those ranks sum its gradient.
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/parameters.h"

namespace ff {

enum class TensorStyle { replicated, column, row, vocab };
const char* tensor_style_name(TensorStyle s);

struct PlanRule {
  const char* suffix;  // matched against the end of the parameter name
  TensorStyle style;
};
const std::vector<PlanRule>& llama_tensor_plan();
// The style of one parameter; throws naming the parameter when no rule matches.
TensorStyle style_of(const std::string& name);

// Throws with the numbers and the rule when the model cannot be split t ways (heads, kv heads,
// hidden size, FFN size and vocabulary must divide; with sp the sequence too).
void validate_tensor_parallel(const ModelConfig& c, int t, bool sequence_parallel);

class PlanSlicer final : public TensorSlicer {
 public:
  PlanSlicer(const ModelConfig& c, int ways, int rank);
  TensorSlice slice(const std::string& name, const std::vector<int64_t>& full_shape) const override;
  int ways() const { return ways_; }
  int rank() const { return rank_; }

 private:
  int head_dim_, n_kv_heads_, ways_, rank_;
};

// Whether the replicas of this tensor hold partial gradients that must be summed over them:
// replicated kv heads always (each rank's query heads add their part), norm weights only under
// sequence parallelism (each rank saw only its rows); without it they are computed whole.
bool replica_grads_are_partial(const ParamView& v, bool sequence_parallel);

}  // namespace ff
