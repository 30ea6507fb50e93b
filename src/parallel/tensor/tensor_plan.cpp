#include "parallel/tensor/tensor_plan.h"

#include <stdexcept>

#include <fmt/format.h>

namespace ff {

const char* tensor_style_name(TensorStyle s) {
  switch (s) {
    case TensorStyle::replicated: return "replicated";
    case TensorStyle::column: return "column";
    case TensorStyle::row: return "row";
    case TensorStyle::vocab: return "vocab";
  }
  return "?";
}

const std::vector<PlanRule>& llama_tensor_plan() {
  static const std::vector<PlanRule> plan = {
      {"embed_tokens.weight", TensorStyle::vocab},
      {"self_attn.q_proj.weight", TensorStyle::column},
      {"self_attn.k_proj.weight", TensorStyle::column},
      {"self_attn.v_proj.weight", TensorStyle::column},
      // A q/k/v bias is cut as its weight's rows: each rank adds the bias of its own heads.
      {"self_attn.q_proj.bias", TensorStyle::column},
      {"self_attn.k_proj.bias", TensorStyle::column},
      {"self_attn.v_proj.bias", TensorStyle::column},
      {"self_attn.o_proj.weight", TensorStyle::row},
      {"mlp.gate_proj.weight", TensorStyle::column},
      {"mlp.up_proj.weight", TensorStyle::column},
      {"mlp.down_proj.weight", TensorStyle::row},
      {"input_layernorm.weight", TensorStyle::replicated},
      {"post_attention_layernorm.weight", TensorStyle::replicated},
      {"model.norm.weight", TensorStyle::replicated},
      {"lm_head.weight", TensorStyle::vocab},
      // MoE blocks are replicated over tp whole (model/moe_mlp.cpp): router, experts, shared experts.
      {"block_sparse_moe.gate.weight", TensorStyle::replicated},
      {".w1.weight", TensorStyle::replicated},
      {".w2.weight", TensorStyle::replicated},
      {".w3.weight", TensorStyle::replicated},
      {"shared_expert.gate_proj.weight", TensorStyle::replicated},
      {"shared_expert.up_proj.weight", TensorStyle::replicated},
      {"shared_expert.down_proj.weight", TensorStyle::replicated},
  };
  return plan;
}

static bool ends_with(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

static bool is_kv(const std::string& name) {
  return ends_with(name, "k_proj.weight") || ends_with(name, "v_proj.weight") || ends_with(name, "k_proj.bias") ||
         ends_with(name, "v_proj.bias");
}

TensorStyle style_of(const std::string& name) {
  for (const PlanRule& r : llama_tensor_plan())
    if (ends_with(name, r.suffix)) return r.style;
  throw std::runtime_error("the tensor-parallel plan has no rule for parameter '" + name + "'");
}

void validate_tensor_parallel(const ModelConfig& c, int t, bool sp) {
  if (t < 1) throw std::runtime_error(fmt::format("tp must be >= 1 (got {})", t));
  if (t == 1) return;
  auto need = [&](bool ok, const std::string& msg) {
    if (!ok) throw std::runtime_error("tensor parallelism: " + msg);
  };
  need(c.n_heads % t == 0, fmt::format("n_heads ({}) must be divisible by tp ({}): each rank "
                                       "computes whole attention heads",
                                       c.n_heads, t));
  need(c.n_kv_heads % t == 0 || t % c.n_kv_heads == 0,
       fmt::format("n_kv_heads ({}) must divide by tp ({}) or divide it (then each kv head is "
                   "replicated on tp / n_kv_heads ranks)",
                   c.n_kv_heads, t));
  need(c.dim % t == 0, fmt::format("dim ({}) must be divisible by tp ({})", c.dim, t));
  need(c.ffn_dim % t == 0,
       fmt::format("ffn_dim ({}) must be divisible by tp ({})", c.ffn_dim, t));
  need(c.vocab_size % t == 0,
       fmt::format("vocab_size ({}) must be divisible by tp ({}) for the vocab-parallel embedding "
                   "and loss; re-run `fivefold prepare --vocab {}`",
                   c.vocab_size, t, (c.vocab_size / t + 1) * t));
  need(!sp || c.seq_len % t == 0,
       fmt::format("with sp = true, seq_len ({}) must be divisible by tp ({}): each rank keeps "
                   "seq_len / tp positions of the residual stream",
                   c.seq_len, t));
}

PlanSlicer::PlanSlicer(const ModelConfig& c, int ways, int rank)
    : head_dim_(c.head_dim()), n_kv_heads_(c.n_kv_heads), ways_(ways), rank_(rank) {}

TensorSlice PlanSlicer::slice(const std::string& name, const std::vector<int64_t>& full) const {
  TensorSlice s;
  s.shape = full;
  switch (style_of(name)) {
    case TensorStyle::replicated:
      s.replicas = ways_;
      break;
    case TensorStyle::column:
    case TensorStyle::vocab:
      if (is_kv(name) && n_kv_heads_ < ways_) {
        // One kv head per rank, shared by the ranks whose query heads use it.
        s.shape[0] = head_dim_;
        s.row0 = int64_t(rank_) * n_kv_heads_ / ways_ * head_dim_;
        s.replicas = ways_ / n_kv_heads_;
      } else {
        s.shape[0] = full[0] / ways_;
        s.row0 = rank_ * s.shape[0];
      }
      break;
    case TensorStyle::row:
      s.shape[1] = full[1] / ways_;
      s.col0 = rank_ * s.shape[1];
      break;
  }
  return s;
}

bool replica_grads_are_partial(const ParamView& v, bool sequence_parallel) {
  if (v.replicas <= 1) return false;
  // Every tp rank runs an MoE block whole, on all tokens: its gradients are whole on each.
  if (v.name.find("block_sparse_moe.") != std::string::npos) return false;
  return style_of(v.name) == TensorStyle::replicated ? sequence_parallel : true;
}

}  // namespace ff
