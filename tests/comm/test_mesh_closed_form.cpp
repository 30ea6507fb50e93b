// MPI-free: for world sizes 1..8, every factorisation dp x cp x tp x pp and every ep dividing
// dp x cp, the layout functions of mesh.h against the explicit formulas of mesh_closed_form.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "mesh_closed_form.h"

using namespace ff;
using ff::test::ClosedForm;

TEST(MeshClosedForm, EveryMeshOfOneToEightRanksHasTheFormulaCoordinatesAndMembers) {
  int meshes = 0;
  for (int world = 1; world <= 8; ++world) {
    for (const MeshDegrees& m : test::all_meshes(world)) {
      ++meshes;
      const std::string name = test::mesh_name(m);
      EXPECT_NO_THROW(check_mesh(m, world)) << name;
      for (int r = 0; r < world; ++r) {
        const ClosedForm f(m, r);
        const MeshCoords c = mesh_coords(r, m);
        ASSERT_EQ((std::vector<int>{c.tp, c.cp, c.dp, c.pp, c.ep, c.edp}),
                  (std::vector<int>{f.t, f.c, f.d, f.p, f.e, f.x})) << name << " rank " << r;
        ASSERT_EQ(mesh_rank(c, m), r) << name;
        for (MeshGroup g : test::kAllGroups) {
          const std::vector<int> want = f.members(g);
          ASSERT_EQ(mesh_group_members(r, m, g), want) << name << " rank " << r << " " << mesh_group_name(g);
          // The rank sits in its group at its coordinate along the group.
          ASSERT_EQ(want[size_t(f.coordinate(g))], r) << name << " " << mesh_group_name(g);
        }
        for (unsigned mask = 1; mask < 16; ++mask) {
          ASSERT_EQ(mesh_axes_members(r, m, mask), f.members(mask))
              << name << " rank " << r << " mask " << mask;
        }
        ASSERT_EQ(mesh_axes_members(r, m, 0), std::vector<int>{r});
        ASSERT_EQ(mesh_group_members(r, m, {MeshAxis::dp, MeshAxis::cp}), f.members(MeshGroup::dp_cp))
            << name;
      }
    }
  }
  // Meshes per world size, each factorisation counted once per divisor of dp x cp: 1 for 1 rank;
  // for a prime q, q on dp or cp gives 2 (ep 1 or q), on tp or pp 1, so 6; 20 for 4, 36 for 6 and
  // 50 for 8 (enumerated by hand): 1 + 6 + 6 + 20 + 6 + 36 + 6 + 50.
  EXPECT_EQ(meshes, 131);
}

TEST(MeshClosedForm, ExpertGroupsOfAFourByTwoMeshByHand) {
  // dp 4 x cp 2 = 8 ranks sharing dense weights (tp 1, pp 1): dp_cp index = world rank.
  MeshDegrees m{.dp = 4, .cp = 2, .ep = 4};
  EXPECT_EQ(mesh_group_members(5, m, MeshGroup::ep), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(mesh_group_members(5, m, MeshGroup::edp), (std::vector<int>{1, 5}));
  EXPECT_EQ(mesh_group_members(5, m, MeshGroup::cp), (std::vector<int>{4, 5}));
  EXPECT_EQ(mesh_group_members(5, m, MeshGroup::dp), (std::vector<int>{1, 3, 5, 7}));
  // With tp 2 every group keeps its tp coordinate: rank 3 = (tp 1, cp 1, dp 0).
  MeshDegrees n{.dp = 2, .cp = 1, .tp = 2, .pp = 2, .ep = 2};
  EXPECT_EQ(mesh_group_members(3, n, MeshGroup::ep), (std::vector<int>{1, 3}));
  EXPECT_EQ(mesh_group_members(3, n, MeshGroup::edp), (std::vector<int>{3}));
  EXPECT_EQ(mesh_group_members(6, n, MeshGroup::pp), (std::vector<int>{2, 6}));
}

namespace {
std::string error_of(const MeshDegrees& m, int world) {
  try {
    check_mesh(m, world);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

TEST(MeshClosedForm, BadDegreesNameTheKeyToChange) {
  const std::pair<const char*, MeshDegrees> zero[] = {{"dp", {.dp = 0}}, {"cp", {.cp = 0}}, {"tp", {.tp = 0}},
                                                      {"pp", {.pp = 0}}, {"ep", {.ep = 0}}};
  for (const auto& [key, m] : zero) {
    std::string e = error_of(m, 1);
    EXPECT_TRUE(contains(e, std::string(key) + " degree 0 is invalid")) << e;
    EXPECT_TRUE(contains(e, std::string("change --") + key)) << e;
  }
  std::string product = error_of({.dp = 2, .cp = 2, .tp = 1, .pp = 2}, 6);
  EXPECT_TRUE(contains(product, "dp (2) x cp (2) x tp (1) x pp (2) = 8 but mpirun started 6 ranks"))
      << product;
  EXPECT_TRUE(contains(product, "--dp/--cp/--tp/--pp or -np")) << product;
  std::string ep = error_of({.dp = 3, .cp = 2, .ep = 4}, 6);
  EXPECT_TRUE(contains(ep, "ep (4) must divide dp x cp (3 x 2 = 6)")) << ep;
  EXPECT_TRUE(contains(ep, "change --ep, --dp or --cp")) << ep;
  // Every ep that divides is accepted, every one that does not is refused.
  for (int e = 1; e <= 8; ++e) {
    bool divides = 6 % e == 0;
    EXPECT_EQ(error_of({.dp = 3, .cp = 2, .ep = e}, 6) == "no error", divides) << "ep " << e;
  }
}

TEST(MeshClosedForm, OutOfRangeRanksAndCoordinatesAreRejected) {
  MeshDegrees m{.dp = 2, .tp = 2};
  EXPECT_THROW(mesh_coords(4, m), std::invalid_argument);
  EXPECT_THROW(mesh_coords(-1, m), std::invalid_argument);
  EXPECT_THROW(mesh_rank(MeshCoords{.tp = 2}, m), std::invalid_argument);
  EXPECT_THROW(mesh_rank(MeshCoords{.dp = -1}, m), std::invalid_argument);
}
