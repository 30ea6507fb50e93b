#include "train/export_hf.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "io/safetensors.h"

namespace ff {

namespace fs = std::filesystem;

void export_hugging_face(const std::string& out_dir, const ModelConfig& c,
                         const ParamLayout& layout, const float* params,
                         const std::string& tokenizer_model, int bos_id, int eos_id) {
  fs::create_directories(out_dir);
  std::vector<SafeTensor> tensors;
  for (const ParamView& v : layout.views())
    tensors.push_back({v.name, "F32", v.shape, params + v.offset, v.numel * sizeof(float)});
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
      {"bos_token_id", bos_id},
      {"eos_token_id", eos_id},
      {"torch_dtype", "float32"}};
  write_file_atomic((fs::path(out_dir) / "config.json").string(), config.dump(2) + "\n");
  fs::copy_file(tokenizer_model, fs::path(out_dir) / "tokenizer.model",
                fs::copy_options::overwrite_existing);
  nlohmann::json tok_config = {{"tokenizer_class", "LlamaTokenizer"},
                               {"add_bos_token", true},
                               {"add_eos_token", false}};
  write_file_atomic((fs::path(out_dir) / "tokenizer_config.json").string(),
                    tok_config.dump(2) + "\n");
}

}  // namespace ff
