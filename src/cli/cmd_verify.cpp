#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "cli/layout_option.h"
#include "train/layout_verify.h"
#include "train/train_config.h"

namespace ff::cli {

// Trains a layout and the serial model on the same data and compares them step by step; exits 1
// when a step's loss or gradient norm differs by more than the tolerance. FIVEFOLD_VERIFY_INJECT
// (a gradient scale, hidden: for the selftest) plants an error the comparison must catch.
int cmd_verify(const Args& a) {
  const char* usage =
      "[mpirun -np N] fivefold verify --config FILE --layout \"tp=2,pp=2,zero=1\" [--steps S] [--tolerance T] "
      "[--key value ...]\n  layout keys: dp tp sp pp cp schedule chunks mb m zero recompute (dp: the ranks the "
      "others leave)";
  if (a.help) return std::puts(usage), 0;
  // The other options are config keys, checked by the config's own table.
  a.check({text_option("config"), text_option("layout"), int_option("steps", 1, 100000, "steps to compare"),
           number_option("tolerance", 0, 1, "the largest relative difference of a loss or gradient norm "
                                          "that passes; 1e-5 is the default")},
          usage, true);
  const std::string text = a.require("layout", usage);
  std::vector<std::pair<std::string, std::string>> overrides;
  for (const auto& [k, v] : a.options)
    if (k != "config" && k != "layout" && k != "steps" && k != "tolerance") overrides.emplace_back(k, v);
  TrainConfig cfg = load_train_config(a.get("config"), overrides);
  apply_layout_option(cfg, text, overrides);
  const int steps = a.get_int("steps", 5);
  const double tol = a.get_double("tolerance", 1e-5);
  const Comm& world = comm_world();
  validate_train_config(cfg);
  resolve_layout(cfg, world.size());
  const Mesh mesh(world, MeshDegrees{.dp = cfg.dp, .cp = cfg.cp, .tp = cfg.tp, .pp = cfg.pp, .ep = cfg.ep});
  const char* inject = std::getenv("FIVEFOLD_VERIFY_INJECT");
  const float scale = inject ? std::strtof(inject, nullptr) : 1.0f;
  const VerifyReport r = verify_layout(cfg, mesh, steps, tol, scale);
  if (world.rank() == 0)
    std::printf("verify %s (dp=%d) against the serial run, %d steps:\n%s", text.c_str(), cfg.dp, steps, r.table().c_str());
  return r.first_bad_step == 0 ? 0 : 1;
}

}  // namespace ff::cli
