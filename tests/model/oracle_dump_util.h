#pragma once
// What the dense and the MoE oracle dumps share: the manifest's model config and tensor list, and
// the binary files the checkers read (little-endian float32 / int32).
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/parameters.h"

namespace ff::testkit {

// The optional keys only when set, in the checker's (Hugging Face's) names.
inline nlohmann::json oracle_config_json(const ModelConfig& c) {
  nlohmann::json j = {{"vocab_size", c.vocab_size}, {"dim", c.dim},           {"n_layers", c.n_layers},
                      {"n_heads", c.n_heads},       {"n_kv_heads", c.n_kv_heads}, {"ffn_dim", c.ffn_dim},
                      {"seq_len", c.seq_len},       {"rms_eps", c.rms_eps},   {"rope_theta", c.rope_theta},
                      {"tied_embeddings", c.tied_embeddings}};
  if (c.head_size > 0) j["head_dim"] = c.head_size;
  if (c.qkv_bias) j["qkv_bias"] = true;
  const RopeScaling& r = c.rope_scaling;
  if (r.kind == RopeScalingKind::linear) j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", r.factor}};
  if (r.kind == RopeScalingKind::llama3)
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", r.factor},
                         {"low_freq_factor", r.low_freq_factor},
                         {"high_freq_factor", r.high_freq_factor},
                         {"original_max_position_embeddings", r.original_context}};
  return j;
}

inline void write_bin(const std::string& path, const void* data, size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(bytes));
}

// Adds the tensor list to `manifest` and writes it with params, grads, the batch and the logits.
inline void write_oracle_dump(const std::string& dir, nlohmann::json manifest, const ParamLayout& layout,
                              const std::vector<float>& params, const std::vector<float>& grads,
                              const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                              const std::vector<float>& logits) {
  for (const auto& v : layout.views())
    manifest["params"].push_back({{"name", v.name}, {"shape", v.shape}, {"offset", v.offset}});
  std::ofstream(dir + "/manifest.json") << manifest.dump(1);
  write_bin(dir + "/params.bin", params.data(), params.size() * 4);
  write_bin(dir + "/grads.bin", grads.data(), grads.size() * 4);
  write_bin(dir + "/inputs.bin", tokens.data(), tokens.size() * 4);
  write_bin(dir + "/targets.bin", targets.data(), targets.size() * 4);
  write_bin(dir + "/logits.bin", logits.data(), logits.size() * 4);
}

}  // namespace ff::testkit
