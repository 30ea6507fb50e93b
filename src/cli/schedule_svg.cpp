#include "cli/schedule_svg.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "parallel/pipeline/schedule_sim.h"

namespace ff {

namespace {

constexpr double kLeft = 70, kTop = 64, kRow = 34, kBlock = 26, kRight = 20, kBottom = 48;

struct Style {
  const char* name;  // the legend's word
  const char* dark;  // chunk 0
  const char* light; // chunks >= 1, so interleaved chunks stand apart
};
const Style kForward{"forward", "#4e79a7", "#a0cbe8"};
const Style kBackward{"backward (input)", "#59a14f", "#8cd17d"};
const Style kWeight{"weight gradient", "#b07aa1", "#d4a6c8"};

const Style& style_of(PipeOp op) {
  return op == PipeOp::forward ? kForward : op == PipeOp::backward_weight ? kWeight : kBackward;
}

// Tick spacing in slots: the smallest of 1, 2, 5, 10, 20, 50, ... that keeps labels 40 px apart.
int tick_step(double cell) {
  for (int scale = 1;; scale *= 10)
    for (int k : {1, 2, 5})
      if (k * scale * cell >= 40) return k * scale;
}

std::string block(const PipeScheduleSpec& spec, int rank, const PipeAction& a, const ComputeSpan& span,
                  double cell) {
  const Style& st = style_of(a.op);
  const double x = kLeft + span.start * cell, w = (span.end - span.start) * cell;
  const double y = kTop + rank * kRow + (kRow - kBlock) / 2;
  const std::string label = fmt::format("{}{}", compute_letter(a), a.microbatch);
  // Shrink the label to fit a one-slot block; ~0.62 em per character in a sans-serif font.
  const double font = std::min(12.0, (w - 2) / (0.62 * double(label.size())));
  const int stage = a.chunk * spec.stages + rank;
  return fmt::format(
      "<g><title>{} of microbatch {}, chunk {} (virtual stage {}), t = {:g} to {:g}</title>"
      "<rect class=\"op-{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "fill=\"{}\" stroke=\"white\" stroke-width=\"1\"/>"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text></g>\n",
      to_string(a.op), a.microbatch, a.chunk, stage, span.start, span.end,
      char(std::toupper(compute_letter(a))),
      x, y, w, kBlock, a.chunk > 0 ? st.light : st.dark, x + w / 2, y + kBlock / 2 + font * 0.35, font,
      a.chunk > 0 ? "black" : "white", label);
}

}  // namespace

std::string render_schedule_svg(const PipeScheduleSpec& spec,
                                const std::vector<std::vector<PipeAction>>& schedule) {
  const int p = spec.stages, v = std::max(spec.chunks, 1);
  // The text grid's costs: every chunk action is a whole number of slots.
  const SimResult sim = simulate_schedule(spec, schedule, v, 2.0 * v, 0);
  if (!sim.error.empty()) throw std::invalid_argument("cannot draw the schedule: " + sim.error);
  const double slots = std::max(sim.makespan, 1.0);
  const double cell = std::clamp(1100.0 / slots, 10.0, 36.0);
  const double width = kLeft + slots * cell + kRight, height = kTop + p * kRow + kBottom;
  const std::string title =
      fmt::format("{} schedule, p={}, m={}, v={}: predicted bubble fraction {:.1f}%", to_string(spec.kind),
                  p, spec.microbatches, v, 100 * sim.bubble_fraction);

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<title>{}</title>\n<rect class=\"background\" width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
      width, height, width, height, title, title);
  // Legend: only the kinds this schedule uses (W appears only when backward is split).
  double lx = 10;
  const bool split = spec.kind == PipeSchedule::zb_h1;
  for (const Style* st : {&kForward, &kBackward, &kWeight}) {
    if (st == &kWeight && !split) continue;
    out += fmt::format("<rect class=\"legend\" x=\"{:.0f}\" y=\"34\" width=\"14\" height=\"14\" fill=\"{}\"/>"
                       "<text x=\"{:.0f}\" y=\"45\">{}</text>\n", lx, st->dark, lx + 18,
                       st == &kBackward && !split ? "backward" : st->name);
    lx += 150;
  }
  if (v > 1)
    out += fmt::format("<text x=\"{:.0f}\" y=\"45\">lighter, lower case: chunks 1..{}</text>\n", lx, v - 1);
  for (int r = 0; r < p; ++r) {
    const double y = kTop + r * kRow;
    out += fmt::format("<text x=\"10\" y=\"{:.1f}\">rank {}</text>\n"
                       "<rect class=\"idle\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                       "fill=\"#eeeeee\"/>\n", y + kRow / 2 + 4, r, kLeft, y + (kRow - kBlock) / 2,
                       slots * cell, kBlock);
    for (const ComputeSpan& span : sim.spans[r]) out += block(spec, r, schedule[r][span.action], span, cell);
  }
  // Time axis under the rows.
  const double ay = kTop + p * kRow + 6;
  out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n",
                     kLeft, ay, kLeft + slots * cell, ay);
  const int step = tick_step(cell);
  for (int t = 0; t <= int(std::lround(slots)); t += step) {
    const double x = kLeft + t * cell;
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                       x, ay, x, ay + 5, x, ay + 18, t);
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time (1 = one chunk's "
                     "forward of one microbatch; backward = 2)</text>\n</svg>\n",
                     kLeft + slots * cell / 2, ay + 36);
  return out;
}

}  // namespace ff
