#include "io/png_writer.h"

#include <array>
#include <stdexcept>

#include "io/atomic_file.h"

namespace ff {

namespace {

uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc = 0) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

void put32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s.push_back(char((v >> shift) & 0xFF));
}

void chunk(std::string& out, const char* type, const std::string& data) {
  put32(out, uint32_t(data.size()));
  std::string body = std::string(type, 4) + data;
  out += body;
  put32(out, crc32(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
}

}  // namespace

void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb) {
  if (width <= 0 || height <= 0 || rgb.size() != size_t(width) * size_t(height) * 3)
    throw std::invalid_argument("write_png '" + path + "': the pixels do not match " + std::to_string(width) + " x " +
                                std::to_string(height) + " RGB");
  // Scanlines, each preceded by filter type 0 (none).
  std::string raw;
  raw.reserve(size_t(height) * (size_t(width) * 3 + 1));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    raw.append(reinterpret_cast<const char*>(rgb.data()) + size_t(y) * width * 3, size_t(width) * 3);
  }
  // zlib stream: header, stored deflate blocks of at most 65535 bytes, Adler-32 of the raw data.
  std::string z = {char(0x78), char(0x01)};
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) a = (a + c) % 65521, b = (b + a) % 65521;
  for (size_t at = 0; at < raw.size() || at == 0; at += 65535) {
    const size_t n = std::min<size_t>(65535, raw.size() - at);
    z.push_back(char(at + n >= raw.size() ? 1 : 0));  // BFINAL on the last block, BTYPE 00
    z.push_back(char(n & 0xFF)), z.push_back(char(n >> 8));
    z.push_back(char(~n & 0xFF)), z.push_back(char((~n >> 8) & 0xFF));
    z.append(raw, at, n);
    if (raw.empty()) break;
  }
  put32(z, (b << 16) | a);
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put32(ihdr, uint32_t(width)), put32(ihdr, uint32_t(height));
  ihdr += std::string{char(8), char(2), char(0), char(0), char(0)};  // 8-bit RGB, deflate, no filter, no interlace
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", "");
  write_file_atomic(path, png);
}

}  // namespace ff
