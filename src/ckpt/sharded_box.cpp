#include "ckpt/sharded_box.h"

#include <algorithm>
#include <stdexcept>

namespace ff {

MatrixShape matrix_shape(const std::vector<int64_t>& shape) {
  MatrixShape m;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw std::invalid_argument("tensor shape has a negative dimension");
    if (i + 1 < shape.size()) m.rows *= shape[i];
  }
  if (!shape.empty()) m.cols = shape.back();
  return m;
}

Box full_box(const std::vector<int64_t>& shape) {
  const MatrixShape m = matrix_shape(shape);
  return {0, m.rows, 0, m.cols};
}

Box intersect(const Box& a, const Box& b) {
  Box r{std::max(a.r0, b.r0), std::min(a.r1, b.r1), std::max(a.c0, b.c0), std::min(a.c1, b.c1)};
  if (r.empty()) return {};
  return r;
}

bool contains(const Box& outer, const Box& inner) {
  return inner.r0 >= outer.r0 && inner.r1 <= outer.r1 && inner.c0 >= outer.c0 &&
         inner.c1 <= outer.c1;
}

std::vector<Box> subtract(const Box& a, const Box& b) {
  const Box x = intersect(a, b);
  if (x.empty()) return a.empty() ? std::vector<Box>{} : std::vector<Box>{a};
  std::vector<Box> out;
  const Box parts[4] = {{a.r0, x.r0, a.c0, a.c1},
                        {x.r1, a.r1, a.c0, a.c1},
                        {x.r0, x.r1, a.c0, x.c0},
                        {x.r0, x.r1, x.c1, a.c1}};
  for (const Box& p : parts)
    if (!p.empty()) out.push_back(p);
  return out;
}

std::vector<Box> uncovered(const Box& want, const std::vector<Box>& covers) {
  std::vector<Box> left;
  if (!want.empty()) left.push_back(want);
  for (const Box& c : covers) {
    std::vector<Box> next;
    for (const Box& l : left)
      for (const Box& d : subtract(l, c)) next.push_back(d);
    left = std::move(next);
  }
  return left;
}

std::vector<Box> split_flat_range(const Box& box, int64_t begin, int64_t end) {
  if (begin < 0 || end < begin || end > box.numel()) {
    throw std::invalid_argument("flat range [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ") does not fit " + describe(box) + " (" +
                                std::to_string(box.numel()) + " elements)");
  }
  std::vector<Box> out;
  if (begin == end) return out;
  const int64_t w = box.cols();
  int64_t row = begin / w, col = begin % w;
  const int64_t last_row = (end - 1) / w, last_col = (end - 1) % w + 1;  // last_col exclusive
  if (row == last_row) {
    out.push_back({box.r0 + row, box.r0 + row + 1, box.c0 + col, box.c0 + last_col});
    return out;
  }
  if (col != 0) {  // the partial first row
    out.push_back({box.r0 + row, box.r0 + row + 1, box.c0 + col, box.c1});
    ++row;
  }
  const int64_t full_end = last_col == w ? last_row + 1 : last_row;
  if (full_end > row) out.push_back({box.r0 + row, box.r0 + full_end, box.c0, box.c1});
  if (last_col != w) out.push_back({box.r0 + last_row, box.r0 + last_row + 1, box.c0, box.c0 + last_col});
  return out;
}

std::string describe(const Box& b) {
  return "rows [" + std::to_string(b.r0) + ", " + std::to_string(b.r1) + ") x cols [" +
         std::to_string(b.c0) + ", " + std::to_string(b.c1) + ")";
}

}  // namespace ff
