#include "ckpt/meta.h"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "ckpt/sharded.h"
#include "model/parameters.h"

namespace ff {

namespace fs = std::filesystem;

CheckpointInfo checkpoint_info(const CheckpointState& s, const nlohmann::json& layout) {
  CheckpointInfo info;
  info.step = s.step;
  info.config = model_config_to_json(s.model);
  info.layout = layout;
  info.state = {{"format", "fivefold-train-checkpoint"},
                {"data_epoch", s.data.epoch},
                {"data_cursor", s.data.cursor},
                {"num_params", ParamLayout(s.model).total()},
                {"config", s.config_toml},
                {"tokenizer_checksum", s.tokenizer_checksum}};
  if (!s.router_bias.empty()) info.state["router_bias"] = s.router_bias;  // MoE's selection bias
  if (s.weights_only) info.state["weights_only"] = true;
  if (s.loss_scale)  // fp16: the scale is a power of two, exact in JSON's double
    info.state["loss_scale"] = {{"scale", s.loss_scale->scale},
                                {"clean_steps", s.loss_scale->clean_steps},
                                {"hysteresis_left", s.loss_scale->hysteresis_left}};
  if (s.lr_schedule_steps > 0) info.state["lr_schedule_steps"] = s.lr_schedule_steps;
  if (!s.data_shards.empty()) {
    nlohmann::json folders = nlohmann::json::array();
    for (const DataFolderRecord& f : s.data_shards) {
      nlohmann::json shards = nlohmann::json::array();
      for (const ShardChecksum& c : f.shards)
        shards.push_back({{"split", c.split}, {"file", c.file}, {"checksum", c.checksum}});
      folders.push_back({{"dir", f.dir}, {"weight", f.weight}, {"shards", shards}});
    }
    info.state["data_shards"] = folders;
  }
  return info;
}

CheckpointState checkpoint_state_from_info(const CheckpointInfo& info, const std::string& step_dir) {
  nlohmann::json meta = info.state;
  if (meta.is_object()) {
    meta["model"] = info.config;
    meta["step"] = info.step;
  }
  return checkpoint_state_from_meta(meta, (fs::path(step_dir) / kManifestName).string());
}

std::optional<CheckpointMeta> read_latest_checkpoint_meta(const std::string& run_dir,
                                                          std::optional<int64_t> below) {
  const std::optional<CompleteCheckpoint> found = find_latest_complete(run_dir, below);
  if (!found) return std::nullopt;
  const Manifest m = read_manifest(found->dir);
  return CheckpointMeta{found->dir, checkpoint_state_from_info(m.info, found->dir), m.info.layout,
                        found->skipped};
}

void refuse_only_damaged_checkpoints(const std::string& run_dir) {
  const std::vector<std::string> damaged = damaged_step_dirs(run_dir, -1);
  if (damaged.empty()) return;
  std::string what;
  for (const std::string& d : damaged) what += fmt::format("; '{}': {}", d, incomplete_reason(d));
  throw std::runtime_error(fmt::format(
      "'{}' holds no complete checkpoint, only damaged ones{}. Restore them from a copy, or move them "
      "out of the run folder to start afresh (a fresh start would delete them)",
      run_dir, what));
}

CheckpointMeta checkpoint_meta_in(const std::string& path) {
  refuse_single_file_checkpoint(path);
  if (fs::exists(fs::path(path) / kManifestName)) {
    const std::string why = incomplete_reason(path);
    if (!why.empty())
      throw std::runtime_error(
          fmt::format("checkpoint '{}' is not complete: {}; pass the run folder to use "
                      "its newest complete checkpoint",
                      path, why));
    const Manifest m = read_manifest(path);
    return {path, checkpoint_state_from_info(m.info, path), m.info.layout, {}};
  }
  if (!fs::is_directory(path))
    throw std::runtime_error(fmt::format(
        "no checkpoint at '{}': pass the --out folder of a `fivefold train` run (it holds step_N/ "
        "folders) or one of its step_N folders",
        path));
  std::optional<CheckpointMeta> meta = read_latest_checkpoint_meta(path);
  if (!meta)
    throw std::runtime_error(fmt::format(
        "no complete checkpoint in '{}': a `fivefold train` run writes step_N/ folders there at its "
        "end and every ckpt_every steps; pass such a run folder",
        path));
  return *meta;
}

}  // namespace ff
