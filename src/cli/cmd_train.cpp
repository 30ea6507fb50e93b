#include <cstdio>
#include <optional>
#include <stdexcept>

#include "cli/commands.h"
#include "cli/layout_option.h"
#include "io/new_folder_guard.h"
#include "io/output_dir.h"
#include "comm/broadcast_text.h"
#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "train/init_from.h"
#include "train/stop_signals.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace ff::cli {

int cmd_train(const Args& a) {
  const char* usage = "[mpirun -np N] fivefold train --config FILE --out DIR [--layout \"dp=2,tp=2,pp=2,1f1b,...\"] "
      "[--print-config] [--key value ...]\n"
      "       [mpirun -np N] fivefold train --init-from MODEL_DIR --data DATA --out DIR [--key value ...]";
  if (a.help) {
    std::printf("%s\n\n--print-config prints the whole resolved config before training (it is always saved "
                "as DIR/config.toml)\n\nconfig keys (TOML file or --key value, '_' may be written '-'):\n", usage);
    for (const auto& k : config_keys()) std::printf("  %-16s %s\n", k.name, k.help.c_str());
    return 0;
  }
  const std::string out = a.require("out", usage);
  // Declared before the folder's claim, so a failed start releases the lock, then removes the
  // folder this command created if nothing was written into it.
  const NewFolderGuard created_here(out);
  const Comm& world = comm_world();
  // Rank 0 claims the run folder (its kind checked, its lock held until training ends) before
  // anything is written; the other ranks take its verdict, so a refusal ends every rank alike.
  std::optional<OutputFolder> folder;
  std::string refusal;
  if (world.rank() == 0) {
    try {
      folder.emplace(claim_output_dir(out, "--out", {FolderKind::run, "train", true, false}));
    } catch (const std::exception& e) {
      refusal = e.what();
    }
  }
  refusal = broadcast_text(world, refusal, 0);
  if (!refusal.empty()) throw AgreedError(refusal);
  std::vector<std::pair<std::string, std::string>> overrides;
  for (const auto& [k, v] : a.options)
    if (k != "config" && k != "out" && k != "layout" && k != "print-config") overrides.emplace_back(k, v);
  const std::string print_config_flag = a.get("print-config", "false");
  if (print_config_flag != "true" && print_config_flag != "false")
    throw std::runtime_error("--print-config takes no value (or true | false), got '" + print_config_flag + "'");
  const bool print_config = print_config_flag == "true";
  KeySources set_by;
  TrainConfig cfg = load_train_config(a.get("config"), overrides, &set_by);
  if (a.has("layout")) apply_layout_option(cfg, a.get("layout"), overrides);  // the string `plan` prints
  // A run from a checkpoint's weights (init_from, or an imported --out) takes its model from it.
  take_model_from_checkpoint(cfg, out, set_by);
  validate_train_config(cfg);  // shapes against tp before the rank count: the more useful error
  if (world.rank() == 0)
    for (const std::string& w : config_warnings(cfg)) std::fprintf(stderr, "warning: config: %s\n", w.c_str());
  resolve_layout(cfg, world.size());
  Mesh mesh(world, MeshDegrees{.dp = cfg.dp, .cp = cfg.cp, .tp = cfg.tp, .pp = cfg.pp, .ep = cfg.ep});  // checks the product first
  Trainer trainer(cfg, out, &mesh);
  // The run's summary says what matters; the whole config (80 lines) only when asked for.
  if (print_config && world.rank() == 0) std::printf("%s", config_to_toml(trainer.config()).c_str());
  trainer.run();
  return trainer.stopped() ? kStoppedExitCode : 0;
}

}  // namespace ff::cli
