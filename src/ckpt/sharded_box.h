#pragma once
// The region of a tensor that a checkpoint piece holds or a load request asks for. Every tensor
// is seen as a matrix: a 2-D tensor (R, C) as itself, a 1-D tensor (n) as (1, n), a 0-D one as
// (1, 1), and a higher-rank one as (product of the leading dims, last dim). A region is a box
// [r0, r1) x [c0, c1) of that matrix, which covers exactly the slices the parallel layouts make:
// a tp row block (rows [r0, r1) x all columns), a tp column block (all rows x [c0, c1)), and, once
// split by split_flat_range, a ZeRO chunk that cuts rows of a tensor or of a tp block.
#include <cstdint>
#include <string>
#include <vector>

namespace ff {

struct Box {
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  int64_t rows() const { return r1 - r0; }
  int64_t cols() const { return c1 - c0; }
  int64_t numel() const { return empty() ? 0 : rows() * cols(); }
  bool empty() const { return r1 <= r0 || c1 <= c0; }
  bool operator==(const Box&) const = default;
};

struct MatrixShape {
  int64_t rows = 1, cols = 1;
};

// Throws on a negative dimension.
MatrixShape matrix_shape(const std::vector<int64_t>& shape);
Box full_box(const std::vector<int64_t>& shape);

// Empty (numel() == 0) when the boxes do not meet.
Box intersect(const Box& a, const Box& b);
bool contains(const Box& outer, const Box& inner);
// a minus b as at most four disjoint boxes (the rows above b, below b, and b's rows left and
// right of it); used to name what no piece covers.
std::vector<Box> subtract(const Box& a, const Box& b);

// The parts of want that no box in covers reaches, as disjoint boxes (empty when covered). Does
// not assume covers are disjoint, so it is the ground truth even for a damaged manifest.
std::vector<Box> uncovered(const Box& want, const std::vector<Box>& covers);

// Elements [begin, end) of box in its row-major order, as at most three boxes in that order: the
// partial first row, the whole middle rows, the partial last row. Their elements, concatenated in
// row-major order each, are exactly the range, so a contiguous chunk maps onto them back to back.
// Throws when the range does not fit the box.
std::vector<Box> split_flat_range(const Box& box, int64_t begin, int64_t end);

// "rows [0, 4) x cols [2, 8)"
std::string describe(const Box& b);

}  // namespace ff
