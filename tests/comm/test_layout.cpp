// MPI-free: the chunking rule and the mesh layout arithmetic.
#include <gtest/gtest.h>

#include <numeric>
#include <type_traits>

#include "comm/comm_types.h"
#include "comm/mesh.h"

using namespace ff;

TEST(ChunkRange, CoversEverythingContiguouslyWithNearEqualSizes) {
  for (size_t n : {0, 1, 2, 3, 12, 13, 100, 1001}) {
    for (int parts = 1; parts <= 7; ++parts) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        ChunkRange c = chunk_range(n, parts, i);
        EXPECT_EQ(c.offset, next) << "n=" << n << " parts=" << parts << " i=" << i;
        // The first n % parts chunks carry the extra element.
        EXPECT_EQ(c.count, n / parts + (size_t(i) < n % parts ? 1 : 0));
        next += c.count;
      }
      EXPECT_EQ(next, n);
    }
  }
}

TEST(ChunkRange, RejectsAnIndexOutsideTheGroup) {
  EXPECT_THROW(chunk_range(10, 2, 2), std::invalid_argument);
  EXPECT_THROW(chunk_range(10, 0, 0), std::invalid_argument);
}

TEST(MeshLayout, TensorParallelIsFastestThenContextThenDataThenPipeline) {
  MeshDegrees d{.dp = 2, .cp = 2, .tp = 3, .pp = 2};
  for (int r = 0; r < d.world(); ++r) {
    MeshCoords c = mesh_coords(r, d);
    EXPECT_EQ(r, c.tp + 3 * (c.cp + 2 * (c.dp + 2 * c.pp))) << "rank " << r;
    EXPECT_EQ(mesh_rank(c, d), r);
  }
  MeshCoords c = mesh_coords(1, d);
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(mesh_coords(3, d).cp, 1);   // after the 3 tp ranks
  EXPECT_EQ(mesh_coords(6, d).dp, 1);   // after tp x cp = 6
  EXPECT_EQ(mesh_coords(12, d).pp, 1);  // after tp x cp x dp = 12
}

TEST(MeshLayout, GroupMembersDifferOnlyAlongTheirAxes) {
  MeshDegrees d{.dp = 2, .tp = 2};
  // Rank order: r = tp + 2 dp.
  EXPECT_EQ(mesh_group_members(0, d, {MeshAxis::tp}), (std::vector<int>{0, 1}));
  EXPECT_EQ(mesh_group_members(2, d, {MeshAxis::tp}), (std::vector<int>{2, 3}));
  EXPECT_EQ(mesh_group_members(0, d, {MeshAxis::dp}), (std::vector<int>{0, 2}));
  EXPECT_EQ(mesh_group_members(3, d, {MeshAxis::dp}), (std::vector<int>{1, 3}));
  EXPECT_EQ(mesh_group_members(3, d, {MeshAxis::dp, MeshAxis::tp}), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(mesh_group_members(3, d, {MeshAxis::pp}), (std::vector<int>{3}));

  MeshDegrees e{.dp = 2, .cp = 2, .tp = 2};  // r = tp + 2 cp + 4 dp
  EXPECT_EQ(mesh_group_members(0, e, {MeshAxis::dp, MeshAxis::cp}), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(mesh_group_members(5, e, {MeshAxis::dp, MeshAxis::cp}), (std::vector<int>{1, 3, 5, 7}));
}

TEST(MeshValidation, NamesEveryDegreeTheProductAndTheRankCount) {
  try {
    check_mesh(MeshDegrees{.dp = 2, .tp = 2}, 3);
    FAIL() << "expected a mismatch error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "dp (2) x cp (1) x tp (2) x pp (1) = 4 but mpirun started 3 ranks; change "
                 "--dp/--cp/--tp/--pp or -np so that the product equals the number of ranks");
  }
}

TEST(MeshValidation, RejectsDegreesBelowOne) {
  try {
    check_mesh(MeshDegrees{.tp = 0}, 1);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tp degree 0 is invalid"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_mesh(MeshDegrees{.cp = -2, .pp = -2}, 4), std::invalid_argument);
}

TEST(MeshValidation, AcceptsAMatchingMesh) {
  EXPECT_NO_THROW(check_mesh(MeshDegrees{.dp = 2, .cp = 1, .tp = 2, .pp = 2}, 8));
  EXPECT_NO_THROW(check_mesh(MeshDegrees{}, 1));
}

TEST(MeshValidation, ProductOverflowIsNotMistakenForAMatch) {
  // 65536^2 wraps to 0 in 32 bits; the check must still see the real product.
  EXPECT_THROW(check_mesh(MeshDegrees{.dp = 65536, .tp = 65536}, 0), std::invalid_argument);
}

// The buffer view behind every Comm operation: each supported pointer carries its element type,
// core's typed pointers map their DType, and nothing else converts (a compile error instead of a
// reinterpretation of bytes).
static_assert(!std::is_convertible_v<uint64_t*, CommPtr>, "size_t and uint64_t are not Comm types");
static_assert(!std::is_convertible_v<char*, CommPtr>);
static_assert(!std::is_convertible_v<const float*, CommPtr>, "an output buffer must be writable");
static_assert(!std::is_convertible_v<const uint16_t*, ConstCommPtr>, "16-bit words need their DType");
static_assert(std::is_convertible_v<float*, ConstCommPtr> && std::is_convertible_v<TypedPtr, ConstCommPtr>);

TEST(CommPtr, CarriesTheElementTypeOfThePointer) {
  float f[2];
  double d[2];
  int32_t i[2];
  int64_t l[2];
  uint8_t b[2];
  uint16_t h[2];
  EXPECT_EQ(CommPtr(f).type(), CommType::f32);
  EXPECT_EQ(CommPtr(d).type(), CommType::f64);
  EXPECT_EQ(CommPtr(i).type(), CommType::i32);
  EXPECT_EQ(CommPtr(l).type(), CommType::i64);
  EXPECT_EQ(ConstCommPtr(static_cast<const uint8_t*>(b)).type(), CommType::u8);
  EXPECT_EQ(CommPtr(TypedPtr(h, DType::bf16)).type(), CommType::bf16);
  EXPECT_EQ(ConstCommPtr(ConstTypedPtr(h, DType::f16)).type(), CommType::f16);
  EXPECT_EQ(ConstCommPtr(TypedPtr(f)).type(), CommType::f32);
  EXPECT_EQ(ConstCommPtr(CommPtr(h, CommType::f16)).data(), static_cast<const void*>(h));
  EXPECT_EQ(comm_type_size(CommType::bf16), 2u);
  EXPECT_EQ(comm_type_size(CommType::f16), 2u);
  EXPECT_STREQ(comm_type_name(CommType::bf16), "bf16");
}
