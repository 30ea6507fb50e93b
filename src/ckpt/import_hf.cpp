#include "ckpt/import_hf.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ckpt/safetensors.h"
#include "ckpt/weights_checkpoint.h"
#include "core/memory.h"
#include "io/file_reader.h"
#include "io/tokenizer/tokenizer.h"
#include "io/tokenizer/tokenizer_files.h"
#include "kernels/convert.h"
#include "model/parameters.h"

namespace ff {

namespace fs = std::filesystem;

namespace {

// Where a tensor's bytes are: its file, its dtype and its absolute byte offset there.
struct TensorSource {
  std::string file;
  DType dtype = DType::f32;
  uint64_t offset = 0;
};

// The safetensors files of a folder: the index's weight_map, or the single model.safetensors.
std::map<std::string, std::string> weight_map(const fs::path& dir) {
  std::map<std::string, std::string> where;
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index)) {
    std::ifstream f(index);
    const nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw std::runtime_error(fmt::format("'{}' has no weight_map object; an index maps each tensor name to its "
                                           "shard file (re-download the index)",
                                           index.string()));
    for (const auto& e : j["weight_map"].items()) {
      if (!e.value().is_string() || fs::path(e.value().get<std::string>()).has_parent_path())
        throw std::runtime_error(fmt::format("'{}': weight_map's '{}' is {}, not a file name in the folder",
                                             index.string(), e.key(), e.value().dump()));
      where[e.key()] = (dir / e.value().get<std::string>()).string();
    }
    return where;
  }
  const fs::path single = dir / "model.safetensors";
  if (!fs::exists(single))
    throw std::runtime_error(fmt::format("'{}' has neither model.safetensors nor model.safetensors.index.json "
                                         "(import reads safetensors; convert a pytorch_model.bin first)",
                                         dir.string()));
  const nlohmann::json header = read_safetensors_header(single.string());
  for (const auto& e : header.items())
    if (e.key() != "__metadata__") where[e.key()] = single.string();
  return where;
}

// Tensors the folder may carry that are not parameters of fivefold's model: an untied-looking
// head of a tied model (transformers itself ties it to the embedding on load, discarding the
// file's copy), and RoPE's inverse frequencies that some conversions saved (computed from
// rope_theta here).
bool ignored_tensor(const std::string& name, const ModelConfig& c) {
  if (c.tied_embeddings && name == "lm_head.weight") return true;
  const std::string buffer = ".rotary_emb.inv_freq";
  return name.size() > buffer.size() && name.compare(name.size() - buffer.size(), buffer.size(), buffer) == 0;
}

// Every tensor's place, checked against the layout before a byte of data is read: each
// parameter present with its shape and a dtype import converts, nothing unknown beside them.
std::map<std::string, TensorSource> check_tensors(const fs::path& dir, const ParamLayout& layout,
                                                  const ModelConfig& c) {
  const std::map<std::string, std::string> where = weight_map(dir);
  std::map<std::string, nlohmann::json> headers;  // per file
  std::map<std::string, uint64_t> data_start;
  for (const auto& [name, file] : where)
    if (!headers.count(file)) {
      headers[file] = read_safetensors_header(file);
      data_start[file] = safetensors_data_start(file);
    }
  std::map<std::string, TensorSource> out;
  for (const ParamView& v : layout.views()) {
    const auto it = where.find(v.name);
    if (it == where.end()) {
      const fs::path index = dir / "model.safetensors.index.json";
      throw std::runtime_error(fmt::format("'{}' lacks the tensor {} of shape {} that config.json's model has "
                                           "(a different or incomplete checkpoint)",
                                           (fs::exists(index) ? index : dir / "model.safetensors").string(), v.name,
                                           nlohmann::json(v.full_shape).dump()));
    }
    const nlohmann::json& h = headers[it->second];
    if (!h.contains(v.name))
      throw std::runtime_error(fmt::format("'{}': the index places tensor {} in this file, but the file does not "
                                           "hold it (re-download the shard)",
                                           it->second, v.name));
    const nlohmann::json& t = h.at(v.name);
    const auto shape = t.at("shape").get<std::vector<int64_t>>();
    if (shape != v.full_shape)
      throw std::runtime_error(fmt::format("'{}': tensor {} has shape {} but config.json makes it {}", it->second,
                                           v.name, nlohmann::json(shape).dump(),
                                           nlohmann::json(v.full_shape).dump()));
    const std::string dtype = t.at("dtype").get<std::string>();
    TensorSource s{it->second, DType::f32, data_start[it->second] + t.at("data_offsets")[0].get<uint64_t>()};
    if (dtype == "BF16") s.dtype = DType::bf16;
    else if (dtype == "F16") s.dtype = DType::f16;
    else if (dtype != "F32")
      throw std::runtime_error(fmt::format("'{}': tensor {} is {}; import reads F32, BF16 and F16", it->second,
                                           v.name, dtype));
    out[v.name] = s;
  }
  // Every tensor any file holds, whether the index lists it or not.
  for (const auto& [file, h] : headers)
    for (const auto& e : h.items())
      if (e.key() != "__metadata__" && !out.count(e.key()) && !ignored_tensor(e.key(), c))
        throw std::runtime_error(fmt::format(
            "'{}': tensor {} is not part of the {} model config.json describes ({}); import only models "
            "fivefold computes exactly",
            file, e.key(), c.qkv_bias ? "qwen2" : "llama",
            e.key().find(".bias") != std::string::npos ? "a bias fivefold's model lacks" : "an unknown name"));
  for (const auto& [name, file] : where)
    if (!out.count(name) && !ignored_tensor(name, c) && !headers[file].contains(name))
      throw std::runtime_error(fmt::format("'{}': the index lists tensor {} in '{}', which does not hold it",
                                           (dir / "model.safetensors.index.json").string(), name, file));
  return out;
}

// tokenizer.json when the folder has it (fivefold reads every family's, SentencePiece-BPE ones
// included), else tokenizer.model.
fs::path pick_tokenizer(const fs::path& dir) {
  for (const char* name : {"tokenizer.json", "tokenizer.model"})
    if (fs::exists(dir / name)) return dir / name;
  throw std::runtime_error(fmt::format("'{}' has neither tokenizer.json nor tokenizer.model to train with; copy "
                                       "the model's tokenizer files into the folder",
                                       dir.string()));
}

}  // namespace

ImportResult import_hugging_face(const std::string& hf_dir, const std::string& out_dir, const ImportOptions& opt) {
  const fs::path dir(hf_dir);
  ImportResult result;
  result.hf = model_config_from_hf_file((dir / "config.json").string());
  const ModelConfig& c = result.hf.model;
  const fs::path tok = pick_tokenizer(dir);
  CheckpointState state;
  state.model = c;
  {
    // Opened for its size and checksum, and closed before the tensors stream: a large vocabulary's
    // tables would otherwise sit beside the chunk buffers at import's peak.
    const std::unique_ptr<TextTokenizer> tokenizer = open_tokenizer(tok.string());
    // A model may pad its vocabulary past the tokenizer's (Qwen2.5: 151936 rows, 151665 tokens);
    // a token without an embedding row cannot be.
    if (tokenizer->vocab_size() > c.vocab_size)
      throw std::runtime_error(fmt::format("'{}' has {} tokens but config.json's vocab_size is {}: every token "
                                           "needs an embedding row; use the model's own tokenizer",
                                           tok.string(), tokenizer->vocab_size(), c.vocab_size));
    state.tokenizer_checksum = tokenizer->checksum();
  }
  const ParamLayout layout(c);
  const std::map<std::string, TensorSource> sources = check_tensors(dir, layout, c);

  size_t largest = 0;
  for (const ParamView& v : layout.views()) largest = std::max(largest, v.numel);
  const size_t chunk = std::max<size_t>(1, std::min(opt.chunk_elements, largest));
  TrackedBuffer<float> f32(chunk, MemCategory::workspace);
  TrackedBuffer<uint16_t> half;
  std::map<std::string, std::unique_ptr<FileReader>> files;

  fs::create_directories(out_dir);
  copy_tokenizer_files(tok.string(), out_dir, tok.filename().string());
  WeightsCheckpointWriter writer(out_dir, state);
  for (const ParamView& v : layout.views()) {
    const TensorSource& s = sources.at(v.name);
    auto& reader = files[s.file];
    if (!reader) reader = std::make_unique<FileReader>(s.file, "safetensors file", "re-download the model");
    const size_t elem = dtype_size(s.dtype);
    for (size_t at = 0; at < v.numel; at += chunk) {
      const size_t n = std::min(chunk, v.numel - at);
      if (s.dtype == DType::f32) {
        reader->read_at(s.offset + at * elem, f32.data(), n * elem);
      } else {
        if (half.size() == 0) half.allocate(chunk, MemCategory::workspace);
        reader->read_at(s.offset + at * elem, half.data(), n * elem);
        convert_to_f32(f32.data(), ConstTypedPtr(half.data(), s.dtype), n);
      }
      writer.add(v, int64_t(at), int64_t(at + n), f32.data());
    }
    result.params += v.numel;
  }
  writer.finish();
  result.tokenizer_file = tok.filename().string();
  return result;
}

}  // namespace ff
