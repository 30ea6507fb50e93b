#include <cstdio>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "io/atomic_file.h"
#include "parallel/pipeline/pipeline_schedule.h"
#include "parallel/pipeline/schedule_sim.h"
#include "cli/schedule_svg.h"

namespace ff::cli {

// Draws a pipeline schedule without running it: one row per rank, unit costs (forward 1,
// backward 2, or input/weight gradients 1 + 1 for zb-h1), and the predicted bubble fraction;
// --svg also writes the same picture as an SVG file.
int cmd_schedule(const Args& a) {
  const char* usage =
      "fivefold schedule --pp P --microbatches M --schedule gpipe|1f1b|interleaved|zb-h1 [--chunks V] [--svg FILE]";
  if (a.help) return std::puts(usage), 0;
  a.check({text_option("schedule"), text_option("svg"), int_option("pp", 2, 1024, "pipeline stages"),
           int_option("microbatches", 1, 65536, "micro-batches per step"),
           int_option("chunks", 1, 64, "model chunks per rank, interleaved only")},
          usage);
  const std::string svg = a.get("svg");
  // A bare `--svg` parses as "true"; refuse it rather than write a file named "true".
  if (a.has("svg") && (svg.empty() || svg == "true"))
    throw std::runtime_error(std::string("--svg needs a file name\nusage: ") + usage);
  PipeScheduleSpec spec{pipe_schedule_names().parse(a.require("schedule", usage), "schedule"), a.get_int("pp", 2),
                        a.get_int("microbatches", 4), a.get_int("chunks", 1)};
  // The drawing holds one block per action and a row per rank: bounded before it is built.
  constexpr long long kMaxActions = 1'000'000;
  const long long actions = 1LL * spec.stages * spec.microbatches * spec.chunks;
  if (actions > kMaxActions)
    throw std::runtime_error(fmt::format(
        "pp x microbatches x chunks = {} x {} x {} = {} blocks to draw, more than {}; a schedule's shape shows "
        "at a few micro-batches per stage, e.g. --microbatches {}",
        spec.stages, spec.microbatches, spec.chunks, actions, kMaxActions, 4 * spec.stages));
  try {
    validate_schedule_spec(spec);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string(e.what()) + "\nusage: " + usage);
  }
  const auto schedule = make_schedule(spec);
  std::printf("%s", render_schedule_text(spec, schedule).c_str());
  if (!svg.empty()) {
    write_file_atomic(svg, render_schedule_svg(spec, schedule));
    std::printf("wrote %s\n", svg.c_str());
  }
  return 0;
}

}  // namespace ff::cli
