// `fivefold report` renders a PNG a test can open (its signature, its IHDR size, every chunk's
// CRC) and read: tesseract's OCR finds the panels' titles, axis labels and the legend's run names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "test_data.h"

using namespace ff::testkit;

namespace {
uint32_t be32(const std::string& s, size_t at) {
  return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 | uint32_t(uint8_t(s[at + 2])) << 8 |
         uint8_t(s[at + 3]);
}
uint32_t crc32(const std::string& s) {  // the reference bitwise CRC-32, no table
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return ~c;
}
}  // namespace

TEST(Report, PngOfTwoRunsOpensAndShowsTitlesAxisLabelsAndLegend) {
  // Two runs side by side: one trained here, and the same folder again under a second name (CI
  // time is short); the legend names them by folder.
  const std::string dir = temp_dir("report"), a = dir + "/alpha", b = dir + "/bravo", out = dir + "/r.png";
  const CliResult t = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() +
                                   " --out " + a + " --steps 4 --eval-every 2 --threads 1");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  std::filesystem::create_directory_symlink(a, b);
  const CliResult r = run_fivefold("report --runs " + a + "," + b + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string png = read_file(out);
  ASSERT_GT(png.size(), 1000u);
  ASSERT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
  size_t at = 8;
  uint32_t w = 0, h = 0;
  while (at + 12 <= png.size()) {
    const uint32_t n = be32(png, at);
    const std::string type = png.substr(at + 4, 4), data = png.substr(at + 8, n);
    EXPECT_EQ(be32(png, at + 8 + n), crc32(type + data)) << type;
    if (type == "IHDR") w = be32(data, 0), h = be32(data, 4);
    at += 12 + n;
  }
  EXPECT_EQ(w, 1680u);  // four 420 x 260 panels at twice the size
  EXPECT_EQ(h, 1040u);
  // Debian's tesseract reads the picture back; every label must be there.
  FILE* ocr = popen(("tesseract " + out + " stdout 2>/dev/null").c_str(), "r");
  ASSERT_NE(ocr, nullptr);
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, ocr)) text.append(buf, n);
  ASSERT_EQ(pclose(ocr), 0) << "tesseract missing? scripts/setup.sh installs tesseract-ocr";
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const char* label : {"training loss", "validation loss", "throughput", "memory by category", "tokens/s",
                            "step", "bytes", "alpha", "bravo"})
    EXPECT_NE(text.find(label), std::string::npos) << "'" << label << "' not read from the PNG; OCR read:\n" << text;
}
