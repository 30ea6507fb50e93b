#include "train/init_from.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "ckpt/checkpoint_state.h"
#include "io/tokenizer/tokenizer.h"

namespace ff {

namespace fs = std::filesystem;

const std::vector<std::string>& model_shape_keys() {
  static const std::vector<std::string> keys = {
      "vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "ffn_dim", "rms_eps", "rope_theta",
      "rope_scaling", "rope_factor", "rope_low_freq_factor", "rope_high_freq_factor", "rope_original_seq_len",
      "max_positions", "head_dim", "qkv_bias", "tied_embeddings", "n_experts", "top_k", "expert_ffn_dim",
      "moe_layers", "shared_experts", "router", "aux_loss_coeff", "z_loss_coeff", "router_bias_update",
      "capacity_factor"};
  return keys;
}

namespace {

// The tokenizer file beside a checkpoint: in the folder named, else in the run folder above a
// step_N folder. "" when there is none (or the folder holds both kinds, which the run refuses
// when it reads the data's instead).
std::string tokenizer_beside(const std::string& named, const std::string& step_dir) {
  for (const fs::path& dir : {fs::path(named), fs::path(step_dir).parent_path()}) {
    try {
      return tokenizer_file_in(dir.string());
    } catch (const std::exception&) {
    }
  }
  return "";
}

}  // namespace

WeightsStart open_weights_start(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw std::runtime_error(fmt::format(
        "config key 'init_from': '{}' is not a folder; name the --out folder of `fivefold import` or of a "
        "`fivefold train` run (or one of its step_N folders)",
        dir));
  WeightsStart s;
  try {
    s.checkpoint = checkpoint_meta_in(dir);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format(
        "config key 'init_from': no weights to start from in '{}': {}. Name a folder `fivefold import --out` or "
        "`fivefold train --out` wrote (it holds step_N/ folders with a manifest.json)",
        dir, e.what()));
  }
  s.folder = dir;
  s.tokenizer_path = tokenizer_beside(dir, s.checkpoint.dir);
  return s;
}

std::optional<WeightsStart> find_weights_start(const TrainConfig& c, const std::optional<CheckpointMeta>& out_latest,
                                               const std::string& out_dir) {
  if (out_latest) {
    if (!out_latest->state.weights_only) return std::nullopt;  // a full checkpoint: resumed
    return WeightsStart{*out_latest, out_dir, tokenizer_beside(out_dir, out_latest->dir)};
  }
  if (c.init_from.empty()) return std::nullopt;
  return open_weights_start(c.init_from);
}

void take_model_from_checkpoint(TrainConfig& c, const std::string& out_dir, const KeySources& set_by) {
  const std::optional<CheckpointMeta> out_latest = read_latest_checkpoint_meta(out_dir);
  const std::optional<WeightsStart> start = find_weights_start(c, out_latest, out_dir);
  // A full checkpoint in the run folder is resumed; with init_from set, the same command that
  // started the run (no model keys) must resume it, so its model is taken from that checkpoint.
  const CheckpointMeta* from = start ? &start->checkpoint : !c.init_from.empty() && out_latest ? &*out_latest : nullptr;
  if (!from) return;
  const ModelConfig& m = from->state.model;
  const std::string folder = start ? start->folder : out_dir;
  TrainConfig theirs = c;
  theirs.model = m;
  for (const std::string& key : model_shape_keys()) {
    const auto it = set_by.find(key);
    if (it == set_by.end() || (key == "vocab_size" && c.model.vocab_size == 0)) continue;
    std::string mine = config_value_text(c, key), want = config_value_text(theirs, key);
    // max_positions 0 means "seq_len": compare the context the user's value gives.
    if (key == "max_positions" && c.model.max_positions > 0) want = std::to_string(m.context_length());
    if (mine != want)
      throw std::runtime_error(fmt::format(
          "config key '{}': {} is {} in {}'s checkpoint but {} here ({}); drop the key or make it {} (the "
          "model's shape is the checkpoint's whose weights the run starts from)",
          key, key, want, folder, mine, it->second, want));
  }
  const auto seq_set = set_by.find("seq_len");
  const int T = seq_set != set_by.end() ? c.model.seq_len : m.seq_len;
  if (T > m.context_length())
    throw std::runtime_error(fmt::format(
        "config key 'seq_len' is {} here ({}) but the model in '{}' serves at most {} positions (its "
        "max_positions, or the seq_len it was trained at where that is unset); set seq_len <= {}",
        T, seq_set->second, folder, m.context_length(), m.context_length()));
  c.model = m;
  c.model.seq_len = T;
  // A shorter window must not shrink the context the model serves (export writes it back).
  if (T != m.seq_len && m.max_positions == 0) c.model.max_positions = m.seq_len;
}

std::string describe_weights_difference(const ModelConfig& checkpoint, const ModelConfig& run) {
  ModelConfig a = checkpoint, b = run;
  a.max_positions = a.context_length(), b.max_positions = b.context_length();
  a.seq_len = b.seq_len = 1;
  return describe_model_difference(a, b);
}

}  // namespace ff
