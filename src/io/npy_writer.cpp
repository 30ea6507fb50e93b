#include "io/npy_writer.h"

#include <bit>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

static_assert(std::endian::native == std::endian::little, "the .npy header declares little-endian floats");

NpyFloat32Writer::NpyFloat32Writer(const std::string& path, const std::vector<int64_t>& shape)
    : path_(path), file_(path) {
  std::string dims;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument(fmt::format("{}: a .npy dimension is negative ({})", path, d));
    dims += fmt::format("{}, ", d);
    expected_ *= uint64_t(d);
  }
  // A one-element tuple keeps its comma, "(5,)"; longer ones may too.
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  else if (!dims.empty()) dims.pop_back();
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  // Magic (6), version (2), header length (2), then the header padded with spaces and ended by
  // '\n' so the data starts on a 64-byte boundary, as NumPy writes it.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 65535) throw std::invalid_argument(path + ": the .npy shape is too long for a 1.0 header");
  const uint16_t len = uint16_t(header.size());
  file_.write("\x93NUMPY\x01\x00", 8);
  file_.write(&len, 2);
  file_.write(header.data(), header.size());
}

void NpyFloat32Writer::append(const float* values, size_t count) {
  file_.write(values, count * sizeof(float));
  written_ += count;
}

void NpyFloat32Writer::commit() {
  if (written_ != expected_)
    throw std::logic_error(fmt::format("{}: {} floats written, the shape holds {}", path_, written_, expected_));
  file_.commit();
}

}  // namespace ff
