#pragma once
// A minimal PNG encoder (8-bit RGB, no filtering, zlib "stored" blocks): enough to write a chart
// without a graphics library. The files are larger than compressed ones, and every viewer opens them.
#include <cstdint>
#include <string>
#include <vector>

namespace ff {

// rgb: width * height * 3 bytes, rows top to bottom. Written atomically; throws naming the path.
void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb);

}  // namespace ff
