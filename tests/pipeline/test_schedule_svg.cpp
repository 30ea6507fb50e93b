// The SVG drawing of a schedule: well-formed markup, one block per compute action, the bubble.
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/pipeline/pipeline_schedule.h"
#include "parallel/pipeline/schedule_sim.h"
#include "cli/schedule_svg.h"

namespace ff {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every tag closes in order, nothing but tags contains '<', and text has no raw '&'.
void expect_well_formed(const std::string& svg) {
  std::vector<std::string> open;
  for (size_t i = 0; i < svg.size();) {
    if (svg[i] == '&') ADD_FAILURE() << "raw & at " << i;
    if (svg[i] != '<') {
      ++i;
      continue;
    }
    const size_t end = svg.find('>', i);
    ASSERT_NE(end, std::string::npos) << "unclosed tag at " << i;
    std::string tag = svg.substr(i + 1, end - i - 1);
    ASSERT_EQ(tag.find('<'), std::string::npos) << "'<' inside tag at " << i;
    if (tag[0] == '/') {
      ASSERT_FALSE(open.empty()) << "closing " << tag << " with nothing open";
      EXPECT_EQ(open.back(), tag.substr(1)) << "at " << i;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
    i = end + 1;
  }
  EXPECT_TRUE(open.empty()) << open.size() << " tags left open, first " << (open.empty() ? "" : open[0]);
}

double attr(const std::string& tag, const std::string& name) {
  const size_t at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return -1;
  return std::stod(tag.substr(at + name.size() + 3));
}

TEST(ScheduleSvg, OneBlockPerComputeActionInsideTheDrawing) {
  const PipeScheduleSpec specs[] = {{PipeSchedule::gpipe, 2, 3},
                                    {PipeSchedule::one_f_one_b, 4, 8},
                                    {PipeSchedule::interleaved, 2, 4, 2},
                                    {PipeSchedule::zb_h1, 4, 8}};
  for (const PipeScheduleSpec& spec : specs) {
    SCOPED_TRACE(to_string(spec.kind));
    const auto sched = make_schedule(spec);
    const std::string svg = render_schedule_svg(spec, sched);
    ASSERT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
    ASSERT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
    expect_well_formed(svg);
    size_t f = 0, b = 0, w = 0;
    for (const auto& rank : sched)
      for (const PipeAction& a : rank) {
        f += a.op == PipeOp::forward;
        b += a.op == PipeOp::backward || a.op == PipeOp::backward_input;
        w += a.op == PipeOp::backward_weight;
      }
    EXPECT_EQ(count(svg, "<rect class=\"op-F\""), f);
    EXPECT_EQ(count(svg, "<rect class=\"op-B\""), b);
    EXPECT_EQ(count(svg, "<rect class=\"op-W\""), w);
    EXPECT_EQ(count(svg, "<rect class=\"op-"), f + b + w);
    EXPECT_EQ(count(svg, ">rank "), size_t(spec.stages));
    // Every block lies inside the picture.
    const size_t head = svg.find('>');
    const double width = attr(svg.substr(0, head), "width"), height = attr(svg.substr(0, head), "height");
    for (size_t at = svg.find("<rect class=\"op-"); at != std::string::npos; at = svg.find("<rect class=\"op-", at + 1)) {
      const std::string tag = svg.substr(at, svg.find('>', at) - at);
      EXPECT_GE(attr(tag, "x"), 0);
      EXPECT_GT(attr(tag, "width"), 0);
      EXPECT_LE(attr(tag, "x") + attr(tag, "width"), width + 0.1) << tag;
      EXPECT_LE(attr(tag, "y") + attr(tag, "height"), height) << tag;
    }
    // The predicted bubble, as the simulator computes it, in the title.
    const SimResult sim = simulate_schedule(spec, sched, spec.chunks, 2.0 * spec.chunks, 0);
    char bubble[64];
    std::snprintf(bubble, sizeof bubble, "predicted bubble fraction %.1f%%", 100 * sim.bubble_fraction);
    EXPECT_EQ(count(svg, bubble), 2u) << bubble;  // the document's <title> and the heading
  }
}

TEST(ScheduleSvg, LabelsBlocksWithMicrobatchAndChunk) {
  const PipeScheduleSpec spec{PipeSchedule::interleaved, 2, 2, 2};
  const std::string svg = render_schedule_svg(spec, make_schedule(spec));
  EXPECT_NE(svg.find(">F1</text>"), std::string::npos);  // chunk 0: upper case
  EXPECT_NE(svg.find(">f1</text>"), std::string::npos);  // chunk 1: lower case, lighter
  EXPECT_NE(svg.find("<title>forward of microbatch 1, chunk 1 (virtual stage 3), t = "), std::string::npos);
  EXPECT_NE(svg.find("chunks 1..1"), std::string::npos);  // the legend explains the shading
  EXPECT_EQ(svg.find("op-W"), std::string::npos);
}

TEST(ScheduleSvg, RefusesAScheduleThatCannotRun) {
  const PipeScheduleSpec spec{PipeSchedule::gpipe, 2, 2};
  auto sched = make_schedule(spec);
  sched[1].erase(sched[1].begin());  // rank 1 no longer receives microbatch 0's activation
  EXPECT_THROW(render_schedule_svg(spec, sched), std::invalid_argument);
}

}  // namespace
}  // namespace ff
