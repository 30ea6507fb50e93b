#include "cli/report_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <cairo.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/memory.h"
#include "io/atomic_file.h"

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

// What both outputs draw: the one description of the chart, painted as SVG or through Cairo as PNG.
class Painter {
 public:
  virtual ~Painter() = default;
  virtual void line(double x0, double y0, double x1, double y1, Rgb c) = 0;
  virtual void rect(double x, double y, double w, double h, Rgb c) = 0;
  virtual void text(double x, double y, const std::string& s) = 0;
};

// Cairo's image surface at twice the chart's size, so its text (DejaVu through fontconfig) stays
// legible; written as a compressed PNG in one piece.
class CairoPainter final : public Painter {
 public:
  CairoPainter(int w, int h)
      : surface_(cairo_image_surface_create(CAIRO_FORMAT_RGB24, kScale * w, kScale * h)), cr_(cairo_create(surface_)) {
    cairo_scale(cr_, kScale, kScale);
    cairo_set_source_rgb(cr_, 1, 1, 1);
    cairo_paint(cr_);
    cairo_select_font_face(cr_, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr_, 12);
  }
  ~CairoPainter() override {
    cairo_destroy(cr_);
    cairo_surface_destroy(surface_);
  }
  CairoPainter(const CairoPainter&) = delete;
  CairoPainter& operator=(const CairoPainter&) = delete;
  void line(double x0, double y0, double x1, double y1, Rgb c) override {
    colour_of(c);
    cairo_set_line_width(cr_, 1.5);
    cairo_move_to(cr_, x0, y0);
    cairo_line_to(cr_, x1, y1);
    cairo_stroke(cr_);
  }
  void rect(double x, double y, double w, double h, Rgb c) override {
    colour_of(c);
    cairo_rectangle(cr_, x, y, w, h);
    cairo_fill(cr_);
  }
  void text(double x, double y, const std::string& s) override {
    cairo_set_source_rgb(cr_, 0, 0, 0);
    cairo_move_to(cr_, x, y);
    cairo_show_text(cr_, s.c_str());
  }
  void save(const std::string& path) {
    cairo_surface_flush(surface_);
    std::string png;
    const cairo_status_t st = cairo_surface_write_to_png_stream(surface_, append, &png);
    if (st != CAIRO_STATUS_SUCCESS)
      throw std::runtime_error(fmt::format("encoding '{}' failed: {}", path, cairo_status_to_string(st)));
    write_file_atomic(path, png);
  }

 private:
  static constexpr int kScale = 2;
  static cairo_status_t append(void* out, const unsigned char* data, unsigned int n) {
    static_cast<std::string*>(out)->append(reinterpret_cast<const char*>(data), n);
    return CAIRO_STATUS_SUCCESS;
  }
  void colour_of(Rgb c) { cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0); }
  cairo_surface_t* surface_;
  cairo_t* cr_;
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

// A panel: its title on the first line, the y axis's label (left) and the legend (right) on the
// second, the plot below them, the y axis's end values in the left margin.
constexpr int kPanelW = 420, kPanelH = 260, kPad = 40, kPlotTop = 44, kPlotLeft = 56;

// The runs' names beside a swatch of their colour, in a row ending at the panel's right edge.
void legend(Painter& p, int px, int py, const std::vector<RunSeries>& runs) {
  constexpr double kEntry = 90;
  const double first = px + kPanelW - 10 - kEntry * double(runs.size());
  for (size_t k = 0; k < runs.size(); ++k) {
    const double x = first + kEntry * double(k);
    p.rect(x, py + 24, 10, 8, colour(k));
    p.text(x + 14, py + 32, runs[k].name);
  }
}

// One panel of lines: x and y ranges over every run, axes with their labels and end values, one
// polyline per run, the legend.
void line_panel(Painter& p, int px, int py, const std::string& title, const std::string& y_label,
                const std::vector<RunSeries>& runs, std::vector<double> RunSeries::*xs,
                std::vector<double> RunSeries::*ys) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const RunSeries& r : runs)
    for (size_t i = 0; i < (r.*xs).size(); ++i)
      x0 = std::min(x0, (r.*xs)[i]), x1 = std::max(x1, (r.*xs)[i]), y0 = std::min(y0, (r.*ys)[i]),
      y1 = std::max(y1, (r.*ys)[i]);
  const Rgb axis{90, 90, 90};
  const double left = px + kPlotLeft, bottom = py + kPanelH - kPad, w = kPanelW - kPlotLeft - 20, h = bottom - (py + kPlotTop);
  p.line(left, bottom, left + w, bottom, axis);
  p.line(left, bottom, left, bottom - h, axis);
  p.text(left, py + 16, title);
  p.text(left + w / 2 - 12, bottom + 28, "step");
  p.text(px + 4, py + 32, y_label);
  legend(p, px, py, runs);
  if (!(x1 >= x0)) return p.text(left + 10, bottom - h / 2, "(no data)");
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  p.text(px + 2, bottom - h, fmt::format("{:.3g}", y1));
  p.text(px + 2, bottom, fmt::format("{:.3g}", y0));
  p.text(left - 4, bottom + 14, fmt::format("{:.3g}", x0));
  p.text(left + w - 12, bottom + 14, fmt::format("{:.3g}", x1));
  auto X = [&](double x) { return left + (x - x0) / (x1 - x0) * w; };
  auto Y = [&](double y) { return bottom - (y - y0) / (y1 - y0) * h; };
  for (size_t k = 0; k < runs.size(); ++k) {
    const auto &vx = runs[k].*xs, &vy = runs[k].*ys;
    for (size_t i = 0; i < vx.size(); ++i) {
      if (i > 0) p.line(X(vx[i - 1]), Y(vy[i - 1]), X(vx[i]), Y(vy[i]), colour(k));
      p.rect(X(vx[i]) - 1.5, Y(vy[i]) - 1.5, 3, 3, colour(k));
    }
  }
}

void memory_panel(Painter& p, int px, int py, const std::vector<RunSeries>& runs) {
  double top = 1;
  for (const RunSeries& r : runs)
    for (double b : r.bytes) top = std::max(top, b);
  const double left = px + kPad, bottom = py + kPanelH - kPad, h = bottom - (py + kPlotTop);
  const double group = (kPanelW - 1.5 * kPad) / kMemCategories, bar = group / double(runs.size() + 1);
  p.line(left, bottom, left + group * kMemCategories, bottom, {90, 90, 90});
  p.text(left, py + 16, "memory by category, rank 0 (max " + format_bytes(int64_t(top)) + ")");
  p.text(px + 4, py + 32, "bytes");
  legend(p, px, py, runs);
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
  line_panel(p, 0, 0, "training loss", "loss", runs, &RunSeries::step, &RunSeries::loss);
  line_panel(p, kPanelW, 0, "validation loss", "loss", runs, &RunSeries::val_step, &RunSeries::val_loss);
  line_panel(p, 0, kPanelH, "throughput", "tokens/s", runs, &RunSeries::step, &RunSeries::tokens_per_s);
  memory_panel(p, kPanelW, kPanelH, runs);
}

}  // namespace

void write_report(const std::vector<RunSeries>& runs, const std::string& out) {
  const std::string ext = std::filesystem::path(out).extension().string();
  if (ext == ".png") {
    CairoPainter p(2 * kPanelW, 2 * kPanelH);
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
