#include "ckpt/export_hf.h"

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "ckpt/safetensors.h"
#include "core/memory.h"
#include "io/atomic_file.h"
#include "kernels/convert.h"

namespace ff {

namespace fs = std::filesystem;

DType parse_export_dtype(const std::string& s) {
  static const EnumTable<DType> names = dtype_option_names().subset({DType::f32, DType::bf16});
  return names.parse(s, "export dtype");
}

void export_hugging_face(const std::string& out_dir, const ModelConfig& c,
                         const ParamLayout& layout, const float* params,
                         const std::string& tokenizer_file, int bos_id, int eos_id, DType dtype) {
  if (dtype != DType::f32 && dtype != DType::bf16)
    throw std::invalid_argument(std::string("export writes fp32 or bf16, not ") + dtype_name(dtype));
  const MoeConfig& m = c.moe;
  if (m.enabled()) {
    // Mixtral's layout is ours (block_sparse_moe.gate, experts.N.w1/w2/w3); its model is every
    // block MoE, softmax top-k renormalised, no shared experts and no selection bias, dropless.
    std::string why;
    if (parse_moe_layers(m.moe_layers, c.n_layers).size() != size_t(c.n_layers)) why = "moe_layers is not all";
    else if (m.router != RouterKind::softmax) why = std::string("router is ") + router_names().name(m.router);
    else if (m.shared_experts > 0) why = "shared_experts > 0";
    else if (m.router_bias_update > 0) why = "router_bias_update > 0 (a selection bias)";
    if (!why.empty())
      throw std::runtime_error("export: the Hugging Face Mixtral layout cannot describe this MoE model (" + why +
                               "); only models with every block MoE, router softmax, no shared experts and "
                               "router_bias_update 0 export");
  }
  fs::create_directories(out_dir);
  std::vector<SafeTensor> tensors;
  // bf16: the whole model rounded once (RNE, as PyTorch's .to(torch.bfloat16)), 2 bytes a parameter.
  TrackedBuffer<uint16_t> half;
  if (dtype == DType::bf16) {
    half.allocate(layout.total(), MemCategory::workspace);
    convert_from_f32(TypedPtr(half.data(), DType::bf16), params, layout.total());
  }
  for (const ParamView& v : layout.views()) {
    if (dtype == DType::bf16)
      tensors.push_back({v.name, "BF16", v.shape, half.data() + v.offset, v.numel * sizeof(uint16_t)});
    else
      tensors.push_back({v.name, "F32", v.shape, params + v.offset, v.numel * sizeof(float)});
  }
  write_safetensors((fs::path(out_dir) / "model.safetensors").string(), tensors,
                    {{"format", "pt"}});
  nlohmann::json config = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_act", "silu"},
      {"hidden_size", c.dim},
      {"intermediate_size", c.ffn_dim},
      {"num_hidden_layers", c.n_layers},
      {"num_attention_heads", c.n_heads},
      {"num_key_value_heads", c.n_kv_heads},
      {"max_position_embeddings", c.seq_len},
      {"rms_norm_eps", c.rms_eps},
      {"rope_theta", c.rope_theta},
      {"vocab_size", c.vocab_size},
      {"tie_word_embeddings", c.tied_embeddings},
      {"attention_bias", false},
      {"bos_token_id", bos_id >= 0 ? nlohmann::json(bos_id) : nlohmann::json()},
      {"eos_token_id", eos_id >= 0 ? nlohmann::json(eos_id) : nlohmann::json()},
      {"torch_dtype", dtype == DType::bf16 ? "bfloat16" : "float32"}};
  if (m.enabled()) {
    config["architectures"] = {"MixtralForCausalLM"};
    config["model_type"] = "mixtral";
    config["intermediate_size"] = m.expert_width(c.ffn_dim);
    config["num_local_experts"] = m.n_experts;
    config["num_experts_per_tok"] = m.top_k;
    config["router_aux_loss_coef"] = m.aux_loss_coeff;
    config["output_router_logits"] = false;
  }
  write_file_atomic((fs::path(out_dir) / "config.json").string(), config.dump(2) + "\n");
  const fs::path tok_name = fs::path(tokenizer_file).filename();
  fs::copy_file(tokenizer_file, fs::path(out_dir) / tok_name, fs::copy_options::overwrite_existing);
  // A tokenizer.json carries its own post-processor (BOS/EOS); a SentencePiece model needs
  // LlamaTokenizer told to add BOS.
  const nlohmann::json tok_config =
      tok_name == "tokenizer.json"
          ? nlohmann::json{{"tokenizer_class", "PreTrainedTokenizerFast"}}
          : nlohmann::json{{"tokenizer_class", "LlamaTokenizer"}, {"add_bos_token", true}, {"add_eos_token", false}};
  write_file_atomic((fs::path(out_dir) / "tokenizer_config.json").string(),
                    tok_config.dump(2) + "\n");
}

}  // namespace ff
