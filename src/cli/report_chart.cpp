#include "cli/report_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/memory.h"
#include "io/atomic_file.h"
#include "io/png_writer.h"

namespace ff::cli {

RunSeries read_run(const std::string& run_dir) {
  const std::string path = (std::filesystem::path(run_dir) / "metrics.jsonl").string();
  std::ifstream f(path);
  if (!f) throw std::runtime_error("'" + path + "' does not exist: pass run folders written by `fivefold train`");
  RunSeries r;
  r.name = std::filesystem::path(run_dir).filename().string();
  std::string line;
  while (std::getline(f, line)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception&) {
      continue;  // a torn last line (a full disk) is skipped, as resume drops it
    }
    if (!j.contains("step") || !j.contains("loss")) continue;
    const double s = j["step"].get<double>();
    r.step.push_back(s), r.loss.push_back(j["loss"].get<double>());
    r.tokens_per_s.push_back(j.value("tokens_per_s", 0.0));
    if (j.contains("val_loss")) r.val_step.push_back(s), r.val_loss.push_back(j["val_loss"].get<double>());
    if (j.contains("bytes")) {
      r.bytes.assign(kMemCategories, 0);
      for (int c = 0; c < kMemCategories; ++c) r.bytes[size_t(c)] = j["bytes"].value(mem_category_name(MemCategory(c)), 0.0);
    }
  }
  if (r.step.empty()) throw std::runtime_error("'" + path + "' holds no training step");
  return r;
}

namespace {

struct Rgb {
  uint8_t r, g, b;
};
const Rgb kColours[] = {{31, 119, 180}, {214, 39, 40}, {44, 160, 44}, {148, 103, 189}, {255, 127, 14}, {23, 190, 207}};
Rgb colour(size_t i) { return kColours[i % 6]; }

// What both outputs can draw; PNG leaves the text out (no font), SVG keeps it.
class Painter {
 public:
  virtual ~Painter() = default;
  virtual void line(double x0, double y0, double x1, double y1, Rgb c) = 0;
  virtual void rect(double x, double y, double w, double h, Rgb c) = 0;
  virtual void text(double x, double y, const std::string& s) = 0;
};

class PixelPainter final : public Painter {
 public:
  PixelPainter(int w, int h) : w_(w), h_(h), px_(size_t(w) * h * 3, 255) {}
  void line(double x0, double y0, double x1, double y1, Rgb c) override {
    const int n = int(std::max(std::fabs(x1 - x0), std::fabs(y1 - y0))) + 1;
    for (int i = 0; i <= n; ++i) {
      const double t = double(i) / n;
      set(int(std::lround(x0 + t * (x1 - x0))), int(std::lround(y0 + t * (y1 - y0))), c);
      set(int(std::lround(x0 + t * (x1 - x0))), int(std::lround(y0 + t * (y1 - y0))) + 1, c);  // 2 px thick
    }
  }
  void rect(double x, double y, double w, double h, Rgb c) override {
    for (int yy = int(y); yy < int(y + h); ++yy)
      for (int xx = int(x); xx < int(x + w); ++xx) set(xx, yy, c);
  }
  void text(double, double, const std::string&) override {}
  void save(const std::string& path) const { write_png(path, w_, h_, px_); }

 private:
  void set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
    uint8_t* p = &px_[(size_t(y) * w_ + x) * 3];
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
  }
  int w_, h_;
  std::vector<uint8_t> px_;
};

class SvgPainter final : public Painter {
 public:
  SvgPainter(int w, int h) : svg_(fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">\n"
                                              "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", w, h)) {}
  void line(double x0, double y0, double x1, double y1, Rgb c) override {
    svg_ += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"rgb({},{},{})\" "
                        "stroke-width=\"1.5\"/>\n", x0, y0, x1, y1, c.r, c.g, c.b);
  }
  void rect(double x, double y, double w, double h, Rgb c) override {
    svg_ += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"rgb({},{},{})\"/>\n",
                        x, y, w, h, c.r, c.g, c.b);
  }
  void text(double x, double y, const std::string& s) override {
    svg_ += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-family=\"sans-serif\" font-size=\"12\">{}</text>\n", x, y, s);
  }
  void save(const std::string& path) const { write_file_atomic(path, svg_ + "</svg>\n"); }

 private:
  std::string svg_;
};

constexpr int kPanelW = 420, kPanelH = 260, kPad = 40;

// One panel of lines: x and y ranges over every run, axes, one polyline per run.
void line_panel(Painter& p, int px, int py, const std::string& title, const std::vector<RunSeries>& runs,
                std::vector<double> RunSeries::*xs, std::vector<double> RunSeries::*ys) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const RunSeries& r : runs)
    for (size_t i = 0; i < (r.*xs).size(); ++i)
      x0 = std::min(x0, (r.*xs)[i]), x1 = std::max(x1, (r.*xs)[i]), y0 = std::min(y0, (r.*ys)[i]),
      y1 = std::max(y1, (r.*ys)[i]);
  const Rgb axis{90, 90, 90};
  const double left = px + kPad, bottom = py + kPanelH - kPad, w = kPanelW - 1.5 * kPad, h = kPanelH - 1.6 * kPad;
  p.line(left, bottom, left + w, bottom, axis);
  p.line(left, bottom, left, bottom - h, axis);
  p.text(left, py + 18, title);
  if (!(x1 >= x0)) return p.text(left + 10, bottom - h / 2, "(no data)");
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  p.text(px + 2, bottom - h, fmt::format("{:.3g}", y1));
  p.text(px + 2, bottom, fmt::format("{:.3g}", y0));
  auto X = [&](double x) { return left + (x - x0) / (x1 - x0) * w; };
  auto Y = [&](double y) { return bottom - (y - y0) / (y1 - y0) * h; };
  for (size_t k = 0; k < runs.size(); ++k) {
    const auto &vx = runs[k].*xs, &vy = runs[k].*ys;
    for (size_t i = 0; i < vx.size(); ++i) {
      if (i > 0) p.line(X(vx[i - 1]), Y(vy[i - 1]), X(vx[i]), Y(vy[i]), colour(k));
      p.rect(X(vx[i]) - 1.5, Y(vy[i]) - 1.5, 3, 3, colour(k));
    }
    p.text(left + w - 120, py + 18 + 14 * double(k), runs[k].name);
  }
}

void memory_panel(Painter& p, int px, int py, const std::vector<RunSeries>& runs) {
  double top = 1;
  for (const RunSeries& r : runs)
    for (double b : r.bytes) top = std::max(top, b);
  const double left = px + kPad, bottom = py + kPanelH - kPad, h = kPanelH - 1.6 * kPad;
  const double group = (kPanelW - 1.5 * kPad) / kMemCategories, bar = group / double(runs.size() + 1);
  p.line(left, bottom, left + group * kMemCategories, bottom, {90, 90, 90});
  p.text(left, py + 18, "memory by category, rank 0 (max " + format_bytes(int64_t(top)) + ")");
  for (int c = 0; c < kMemCategories; ++c) {
    p.text(left + c * group, bottom + 14, mem_category_name(MemCategory(c)));
    for (size_t k = 0; k < runs.size(); ++k) {
      const double b = runs[k].bytes.empty() ? 0 : runs[k].bytes[size_t(c)];
      const double bh = b / top * h;
      p.rect(left + c * group + double(k) * bar, bottom - bh, bar - 1, bh, colour(k));
    }
  }
}

void paint(Painter& p, const std::vector<RunSeries>& runs) {
  line_panel(p, 0, 0, "training loss", runs, &RunSeries::step, &RunSeries::loss);
  line_panel(p, kPanelW, 0, "validation loss", runs, &RunSeries::val_step, &RunSeries::val_loss);
  line_panel(p, 0, kPanelH, "tokens/s", runs, &RunSeries::step, &RunSeries::tokens_per_s);
  memory_panel(p, kPanelW, kPanelH, runs);
}

}  // namespace

void write_report(const std::vector<RunSeries>& runs, const std::string& out) {
  const std::string ext = std::filesystem::path(out).extension().string();
  if (ext == ".png") {
    PixelPainter p(2 * kPanelW, 2 * kPanelH);
    paint(p, runs);
    p.save(out);
  } else if (ext == ".svg") {
    SvgPainter p(2 * kPanelW, 2 * kPanelH);
    paint(p, runs);
    p.save(out);
  } else {
    throw std::runtime_error("--out '" + out + "' must end in .png or .svg");
  }
}

}  // namespace ff::cli
