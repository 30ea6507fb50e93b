#include "train/checkpoint.h"

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "io/checkpoint_file.h"

namespace ff {

namespace fs = std::filesystem;

nlohmann::json model_config_to_json(const ModelConfig& c) {
  return {{"vocab_size", c.vocab_size}, {"dim", c.dim},           {"n_layers", c.n_layers},
          {"n_heads", c.n_heads},       {"n_kv_heads", c.n_kv_heads}, {"ffn_dim", c.ffn_dim},
          {"seq_len", c.seq_len},       {"rms_eps", c.rms_eps},   {"rope_theta", c.rope_theta},
          {"tied_embeddings", c.tied_embeddings}, {"init_std", c.init_std}};
}

ModelConfig model_config_from_json(const nlohmann::json& j) {
  ModelConfig c;
  c.vocab_size = j.at("vocab_size");
  c.dim = j.at("dim");
  c.n_layers = j.at("n_layers");
  c.n_heads = j.at("n_heads");
  c.n_kv_heads = j.at("n_kv_heads");
  c.ffn_dim = j.at("ffn_dim");
  c.seq_len = j.at("seq_len");
  c.rms_eps = j.at("rms_eps");
  c.rope_theta = j.at("rope_theta");
  c.tied_embeddings = j.at("tied_embeddings");
  c.init_std = j.at("init_std");
  return c;
}

std::string describe_model_difference(const ModelConfig& a, const ModelConfig& b) {
  // init_std only shapes step 0; a resumed run may change it without harm.
  nlohmann::json ja = model_config_to_json(a), jb = model_config_to_json(b);
  std::string diff;
  for (auto& [key, value] : ja.items()) {
    if (key == "init_std" || value == jb[key]) continue;
    diff += fmt::format("{}{} {} vs {}", diff.empty() ? "" : ", ", key, value.dump(),
                        jb[key].dump());
  }
  return diff;
}

std::string checkpoint_file_name() { return "checkpoint.bin"; }

std::string checkpoint_path_in(const std::string& dir_or_file) {
  fs::path p(dir_or_file);
  if (fs::is_directory(p)) p /= checkpoint_file_name();
  if (!fs::exists(p))
    throw std::runtime_error(fmt::format(
        "no checkpoint at '{}': pass the --out folder of a `fivefold train` run (it holds {})",
        p.string(), checkpoint_file_name()));
  return p.string();
}

void save_checkpoint(const std::string& path, const CheckpointState& s, const float* params,
                     const float* adam_m, const float* adam_v, size_t n) {
  CheckpointWriter w;
  w.set_meta({{"format", "fivefold-train-checkpoint"},
              {"step", s.step},
              {"model", model_config_to_json(s.model)},
              {"data_epoch", s.data.epoch},
              {"data_cursor", s.data.cursor},
              {"num_params", n},
              {"config", s.config_toml}});
  w.add_section_view("params", params, n * sizeof(float));
  w.add_section_view("adam_m", adam_m, n * sizeof(float));
  w.add_section_view("adam_v", adam_v, n * sizeof(float));
  w.write(path);
}

CheckpointState load_checkpoint(const std::string& path, float* params, float* adam_m,
                                float* adam_v, size_t n) {
  CheckpointReader r(path);
  const auto& meta = r.meta();
  if (meta.value("format", "") != "fivefold-train-checkpoint")
    throw std::runtime_error(fmt::format("'{}' is not a fivefold training checkpoint", path));
  CheckpointState s;
  s.model = model_config_from_json(meta.at("model"));
  s.step = meta.at("step");
  s.data.epoch = meta.at("data_epoch");
  s.data.cursor = meta.at("data_cursor");
  s.config_toml = meta.value("config", "");
  auto copy = [&](const char* name, float* dst) {
    if (!dst) return;
    auto bytes = r.section(name);
    if (bytes.size() != n * sizeof(float))
      throw std::runtime_error(fmt::format(
          "checkpoint '{}': section '{}' holds {} floats but this model has {} parameters",
          path, name, bytes.size() / sizeof(float), n));
    std::memcpy(dst, bytes.data(), bytes.size());
  };
  copy("params", params);
  copy("adam_m", adam_m);
  copy("adam_v", adam_v);
  return s;
}

}  // namespace ff
