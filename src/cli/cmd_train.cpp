#include <cstdio>

#include "cli/commands.h"
#include "io/output_dir.h"
#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "train/init_from.h"
#include "train/stop_signals.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace ff::cli {

int cmd_train(const Args& a) {
  const char* usage = "[mpirun -np N] fivefold train --config FILE --out DIR [--key value ...]\n"
      "       [mpirun -np N] fivefold train --init-from MODEL_DIR --data DATA --out DIR [--key value ...]";
  if (a.help) {
    std::printf("%s\n\nconfig keys (TOML file or --key value, '_' may be written '-'):\n", usage);
    for (const auto& k : config_keys()) std::printf("  %-16s %s\n", k.name, k.help.c_str());
    return 0;
  }
  const std::string out = a.require("out", usage);
  ensure_output_dir(out, "--out");
  std::vector<std::pair<std::string, std::string>> overrides;
  for (const auto& [k, v] : a.options)
    if (k != "config" && k != "out") overrides.emplace_back(k, v);
  KeySources set_by;
  TrainConfig cfg = load_train_config(a.get("config"), overrides, &set_by);
  // A run from a checkpoint's weights (init_from, or an imported --out) takes its model from it.
  take_model_from_checkpoint(cfg, out, set_by);
  const Comm& world = comm_world();
  validate_train_config(cfg);  // shapes against tp before the rank count: the more useful error
  resolve_layout(cfg, world.size());
  Mesh mesh(world, MeshDegrees{.dp = cfg.dp, .cp = cfg.cp, .tp = cfg.tp, .pp = cfg.pp, .ep = cfg.ep});  // checks the product first
  Trainer trainer(cfg, out, &mesh);
  if (world.rank() == 0) std::printf("%s", config_to_toml(trainer.config()).c_str());
  trainer.run();
  return trainer.stopped() ? kStoppedExitCode : 0;
}

}  // namespace ff::cli
