#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/report_chart.h"

namespace ff::cli {

// Several runs side by side: loss, validation loss, tokens/s, memory by category.
int cmd_report(const Args& a) {
  const char* usage = "fivefold report --runs RUN[,RUN...] --out report.png|report.svg";
  if (a.help) return std::puts(usage), 0;
  a.only({"runs", "out"}, usage);
  const std::string list = a.require("runs", usage), out = a.require("out", usage);
  std::vector<RunSeries> runs;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = list.find(',', at);
    const std::string dir = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!dir.empty()) runs.push_back(read_run(dir));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (runs.empty()) throw std::runtime_error(std::string("--runs names no run folder\nusage: ") + usage);
  write_report(runs, out);
  std::printf("report of %zu run%s written to %s\n", runs.size(), runs.size() == 1 ? "" : "s", out.c_str());
  return 0;
}

}  // namespace ff::cli
