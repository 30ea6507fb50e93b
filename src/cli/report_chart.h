#pragma once
// `fivefold report`'s drawing: four panels (loss, validation loss, tokens/s, rank 0's memory by
// category) with one colour per run: titles, axis labels, end values and a legend, painted as SVG
// or through Cairo as PNG (at twice the size, for legible text).
#include <string>
#include <vector>

namespace ff::cli {

struct RunSeries {
  std::string name;
  std::vector<double> step, loss, val_step, val_loss, tokens_per_s;
  std::vector<double> bytes;  // the last record's bytes per memory category
};

// Reads RUN/metrics.jsonl; throws naming the file when it is missing or holds no step.
RunSeries read_run(const std::string& run_dir);
// Writes report.svg or report.png (by the extension); throws on any other.
void write_report(const std::vector<RunSeries>& runs, const std::string& out);

}  // namespace ff::cli
