// `fivefold report` renders a PNG a test can open: its signature, its IHDR size, every chunk's
// CRC, the zlib stream inflated by hand (stored blocks) to the pixels, and pixels that are not
// all background.
#include <gtest/gtest.h>

#include <cstdint>
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

TEST(Report, PngOfTwoRunsOpensWithTheRightSizeAndNonBlankPixels) {
  // Two runs side by side: one trained here, and the same folder again (CI time is short).
  const std::string a = temp_dir("report_a"), b = a, out = temp_dir("report") + "/r.png";
  const CliResult t = run_fivefold("train --config " + config_path("tiny.toml") + " --data " + tiny_data_dir() +
                                   " --out " + a + " --steps 4 --eval-every 2 --threads 1");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const CliResult r = run_fivefold("report --runs " + a + "," + b + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string png = read_file(out);
  ASSERT_GT(png.size(), 1000u);
  ASSERT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
  size_t at = 8;
  uint32_t w = 0, h = 0;
  std::string zlib;
  while (at + 12 <= png.size()) {
    const uint32_t n = be32(png, at);
    const std::string type = png.substr(at + 4, 4), data = png.substr(at + 8, n);
    EXPECT_EQ(be32(png, at + 8 + n), crc32(type + data)) << type;
    if (type == "IHDR") w = be32(data, 0), h = be32(data, 4);
    if (type == "IDAT") zlib += data;
    at += 12 + n;
  }
  EXPECT_EQ(w, 840u);
  EXPECT_EQ(h, 520u);
  // Inflate the stored blocks: 1-byte header, LEN, NLEN, LEN bytes.
  std::string raw;
  size_t z = 2;
  for (bool last = false; !last && z < zlib.size();) {
    last = zlib[z] & 1;
    const size_t len = uint8_t(zlib[z + 1]) | size_t(uint8_t(zlib[z + 2])) << 8;
    raw += zlib.substr(z + 5, len);
    z += 5 + len;
  }
  ASSERT_EQ(raw.size(), size_t(h) * (3 * w + 1));
  size_t coloured = 0;
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x) {
      const size_t p = size_t(y) * (3 * w + 1) + 1 + 3 * x;
      coloured += !(uint8_t(raw[p]) == 255 && uint8_t(raw[p + 1]) == 255 && uint8_t(raw[p + 2]) == 255);
    }
  EXPECT_GT(coloured, size_t(w) * h / 100);  // lines, axes and bars: well over 1% of the picture
  EXPECT_LT(coloured, size_t(w) * h / 2);
}
