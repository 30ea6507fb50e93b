#pragma once
// A picture of a planned pipeline schedule: an SVG document with one row per rank, one coloured
// block per compute action (F, B, W; lighter for chunks >= 1) labelled with its microbatch, a time
// axis, and the predicted bubble fraction in the title. Timing is the simulator's at the text
// grid's unit costs (a chunk's forward = 1, backward = 2, or B = W = 1 when split).
#include <string>
#include <vector>

#include "parallel/pipeline/pipeline_schedule.h"

namespace ff {

// Throws std::invalid_argument with the simulator's message if the schedule cannot run.
std::string render_schedule_svg(const PipeScheduleSpec& spec,
                                const std::vector<std::vector<PipeAction>>& schedule);

}  // namespace ff
