#pragma once
// NumPy's .npy format (version 1.0), float32 little-endian, C order: what `np.load` reads with no
// other library. Rows are appended as they are computed, so a large array never sits in memory whole;
// the file is atomic (complete at its path or absent).
#include <cstdint>
#include <string>
#include <vector>

#include "io/atomic_file.h"

namespace ff {

class NpyFloat32Writer {
 public:
  // shape: the array's dimensions; exactly their product of floats must be appended before commit.
  NpyFloat32Writer(const std::string& path, const std::vector<int64_t>& shape);
  void append(const float* values, size_t count);
  void commit();  // throws naming the path when fewer or more values than the shape came

 private:
  std::string path_;
  AtomicFileWriter file_;
  uint64_t expected_ = 1, written_ = 0;
};

}  // namespace ff
