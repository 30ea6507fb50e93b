#pragma once
// A Hugging Face model folder written by the test itself: config.json as the test types it,
// tensors with random values in a chosen dtype, in one model.safetensors or in shards with
// model.safetensors.index.json. The safetensors bytes and the f32 value each stored element
// stands for are worked out here (bf16: the high half of an f32; f16: sign, exponent and
// mantissa by the IEEE formula), not by fivefold's converters.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ff::testing {

struct HfTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;            // "F32", "BF16", "F16" (or anything else, written as 4 bytes)
  std::vector<uint8_t> bytes;   // as stored
  std::vector<float> expected;  // the value each element stands for
};

inline float f16_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  const double v = exp == 0 ? std::ldexp(double(man), -24) : std::ldexp(1.0 + man / 1024.0, exp - 15);
  return float(sign ? -v : v);
}

// Random finite values of the dtype, about N(0, 0.5) in size.
inline HfTensor random_tensor(const std::string& name, std::vector<int64_t> shape, const std::string& dtype,
                              std::mt19937& rng) {
  HfTensor t{name, std::move(shape), dtype, {}, {}};
  size_t n = 1;
  for (int64_t d : t.shape) n *= size_t(d);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  for (size_t i = 0; i < n; ++i) {
    const float x = normal(rng);
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if (dtype == "BF16") {
      const uint16_t h = uint16_t(u >> 16);
      const uint32_t back = uint32_t(h) << 16;
      float v;
      std::memcpy(&v, &back, 4);
      t.bytes.push_back(uint8_t(h & 0xff)), t.bytes.push_back(uint8_t(h >> 8));
      t.expected.push_back(v);
    } else if (dtype == "F16") {
      // A random normal f16 pattern near x: sign of x, exponent 12..16 (about 0.03 to 2), random mantissa.
      const uint16_t h = uint16_t((u >> 31) << 15 | (12 + (u >> 3) % 5) << 10 | (u & 1023));
      t.bytes.push_back(uint8_t(h & 0xff)), t.bytes.push_back(uint8_t(h >> 8));
      t.expected.push_back(f16_value(h));
    } else {
      for (int b = 0; b < 4; ++b) t.bytes.push_back(uint8_t(u >> (8 * b)));
      t.expected.push_back(x);
    }
  }
  return t;
}

// The safetensors layout written out: u64 header length, JSON header padded with spaces, data.
inline void write_safetensors_file(const std::string& path, const std::vector<const HfTensor*>& tensors) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t at = 0;
  for (const HfTensor* t : tensors) {
    header[t->name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {at, at + t->bytes.size()}}};
    at += t->bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';
  std::ofstream f(path, std::ios::binary);
  const uint64_t n = text.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(text.data(), std::streamsize(text.size()));
  for (const HfTensor* t : tensors) f.write(reinterpret_cast<const char*>(t->bytes.data()), std::streamsize(t->bytes.size()));
}

// The tensors of a llama / mistral / qwen2 config.json, named as transformers names them; dtypes
// cycle through `dtypes` tensor by tensor. with_head: write lm_head.weight even when tied.
inline std::vector<HfTensor> family_tensors(const nlohmann::json& cfg, const std::vector<std::string>& dtypes,
                                            uint32_t seed, bool with_head = false) {
  std::mt19937 rng(seed);
  const int64_t V = cfg["vocab_size"], C = cfg["hidden_size"], L = cfg["num_hidden_layers"],
                H = cfg["num_attention_heads"], F = cfg["intermediate_size"];
  const int64_t KV = cfg.value("num_key_value_heads", H);
  const int64_t D = cfg.contains("head_dim") ? cfg["head_dim"].get<int64_t>() : C / H;
  const bool bias = cfg["model_type"] == "qwen2", tied = cfg.value("tie_word_embeddings", false);
  std::vector<HfTensor> out;
  size_t k = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    out.push_back(random_tensor(name, std::move(shape), dtypes[k++ % dtypes.size()], rng));
  };
  add("model.embed_tokens.weight", {V, C});
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {C});
    add(p + "self_attn.q_proj.weight", {H * D, C});
    add(p + "self_attn.k_proj.weight", {KV * D, C});
    add(p + "self_attn.v_proj.weight", {KV * D, C});
    if (bias) {
      add(p + "self_attn.q_proj.bias", {H * D});
      add(p + "self_attn.k_proj.bias", {KV * D});
      add(p + "self_attn.v_proj.bias", {KV * D});
    }
    add(p + "self_attn.o_proj.weight", {C, H * D});
    add(p + "post_attention_layernorm.weight", {C});
    add(p + "mlp.gate_proj.weight", {F, C});
    add(p + "mlp.up_proj.weight", {F, C});
    add(p + "mlp.down_proj.weight", {C, F});
  }
  add("model.norm.weight", {C});
  if (!tied || with_head) add("lm_head.weight", {V, C});
  return out;
}

// Writes config.json and the tensors into dir: one model.safetensors (shards <= 1), else
// `shards` files of consecutive tensors and the index.
inline void write_hf_folder(const std::string& dir, const nlohmann::json& cfg, const std::vector<HfTensor>& tensors,
                            int shards) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  if (shards <= 1) {
    std::vector<const HfTensor*> all;
    for (const auto& t : tensors) all.push_back(&t);
    write_safetensors_file(dir + "/model.safetensors", all);
    return;
  }
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  uint64_t total = 0;
  const size_t per = (tensors.size() + size_t(shards) - 1) / size_t(shards);
  for (int s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, shards);
    std::vector<const HfTensor*> part;
    for (size_t i = size_t(s) * per; i < std::min(tensors.size(), size_t(s + 1) * per); ++i) {
      part.push_back(&tensors[i]);
      index["weight_map"][tensors[i].name] = name;
      total += tensors[i].bytes.size();
    }
    write_safetensors_file(dir + "/" + name, part);
  }
  index["metadata"]["total_size"] = total;
  std::ofstream(dir + "/model.safetensors.index.json") << index.dump(2);
}

}  // namespace ff::testing
