#include "ckpt/export_hf.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ckpt/hf_config.h"
#include "ckpt/safetensors.h"
#include "core/memory.h"
#include "io/atomic_file.h"
#include "io/tokenizer/tokenizer_files.h"
#include "kernels/convert.h"

namespace ff {

namespace fs = std::filesystem;

DType parse_export_dtype(const std::string& s) {
  static const EnumTable<DType> names = dtype_option_names().subset({DType::f32, DType::bf16});
  return names.parse(s, "export dtype");
}

namespace {

void check_moe_describable(const ModelConfig& c) {
  const MoeConfig& m = c.moe;
  if (!m.enabled()) return;
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

// The layout's tensors cut, in order, into shards of at most max_bytes (a larger tensor alone).
std::vector<std::vector<const ParamView*>> plan_shards(const ParamLayout& layout, size_t elem, uint64_t max_bytes) {
  std::vector<std::vector<const ParamView*>> shards(1);
  uint64_t bytes = 0;
  for (const ParamView& v : layout.views()) {
    const uint64_t b = v.numel * elem;
    if (!shards.back().empty() && bytes + b > max_bytes) shards.emplace_back(), bytes = 0;
    shards.back().push_back(&v);
    bytes += b;
  }
  return shards;
}

std::string shard_name(size_t i, size_t n) { return fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, n); }

// Weights files of an earlier export into the same folder that this one does not rewrite: a stale
// model.safetensors beside a new index would be what from_pretrained loads.
void remove_stale_weights(const fs::path& dir, const std::vector<std::string>& keep) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const bool weights = name == "model.safetensors" || name == "model.safetensors.index.json" ||
                         (name.rfind("model-", 0) == 0 && name.find("-of-") != std::string::npos &&
                          e.path().extension() == ".safetensors");
    if (weights && std::find(keep.begin(), keep.end(), name) == keep.end()) fs::remove(e.path());
  }
}

}  // namespace

void export_hugging_face(const std::string& out_dir, const ModelConfig& c, const ParamLayout& layout,
                         const float* params, const std::string& tokenizer_file, int bos_id, int eos_id,
                         DType dtype, uint64_t max_shard_bytes) {
  if (dtype != DType::f32 && dtype != DType::bf16)
    throw std::invalid_argument(std::string("export writes fp32 or bf16, not ") + dtype_name(dtype));
  check_moe_describable(c);
  fs::create_directories(out_dir);
  const size_t elem = dtype_size(dtype);
  const auto shards = plan_shards(layout, elem, max_shard_bytes);
  const bool single = shards.size() == 1;
  std::vector<std::string> names;
  for (size_t i = 0; i < shards.size(); ++i) names.push_back(single ? "model.safetensors" : shard_name(i, shards.size()));
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  uint64_t total = 0;
  TrackedBuffer<uint16_t> half;  // bf16: one shard rounded at a time (RNE, as PyTorch's .to(torch.bfloat16))
  for (size_t i = 0; i < shards.size(); ++i) {
    size_t numel = 0;
    for (const ParamView* v : shards[i]) numel += v->numel;
    if (dtype == DType::bf16 && half.size() < numel) {
      half.release();
      half.allocate(numel, MemCategory::workspace);
    }
    std::vector<SafeTensor> tensors;
    size_t at = 0;
    for (const ParamView* v : shards[i]) {
      if (dtype == DType::bf16) {
        convert_from_f32(TypedPtr(half.data() + at, DType::bf16), params + v->offset, v->numel);
        tensors.push_back({v->name, "BF16", v->shape, half.data() + at, v->numel * elem});
      } else {
        tensors.push_back({v->name, "F32", v->shape, params + v->offset, v->numel * elem});
      }
      at += v->numel;
      weight_map[v->name] = names[i];
      total += v->numel * elem;
    }
    write_safetensors((fs::path(out_dir) / names[i]).string(), tensors, {{"format", "pt"}});
  }
  if (!single) {
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    write_file_atomic((fs::path(out_dir) / "model.safetensors.index.json").string(), index.dump(2) + "\n");
    names.push_back("model.safetensors.index.json");
  }
  remove_stale_weights(out_dir, names);
  write_file_atomic((fs::path(out_dir) / "config.json").string(),
                    hf_config_json(c, bos_id, eos_id, dtype).dump(2) + "\n");
  const std::string tok_name = fs::path(tokenizer_file).filename().string();
  copy_tokenizer_files(tokenizer_file, out_dir, tok_name);
  if (fs::exists(fs::path(out_dir) / "tokenizer_config.json")) return;
  // A run prepared without the Hugging Face side files: tell transformers how to use the file.
  // A tokenizer.json carries its own post-processor (BOS/EOS); a SentencePiece model needs
  // LlamaTokenizer told to add BOS.
  const nlohmann::json tok_config =
      tok_name == "tokenizer.json"
          ? nlohmann::json{{"tokenizer_class", "PreTrainedTokenizerFast"}}
          : nlohmann::json{{"tokenizer_class", "LlamaTokenizer"}, {"add_bos_token", true}, {"add_eos_token", false}};
  write_file_atomic((fs::path(out_dir) / "tokenizer_config.json").string(), tok_config.dump(2) + "\n");
}

}  // namespace ff
