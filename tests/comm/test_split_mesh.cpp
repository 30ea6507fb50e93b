// Sub-communicators and the mesh over a live world.
#include <gtest/gtest.h>

#include <numeric>

#include "comm/mesh.h"
#include "mpi_test_util.h"

using namespace ff;
using ff::test::world;

TEST(Split, ByParityWithReversedKeys) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  Comm sub = w.split(r % 2, -r);  // larger world rank first
  std::vector<int> expected;
  for (int q = p - 1; q >= 0; --q) if (q % 2 == r % 2) expected.push_back(q);
  EXPECT_EQ(sub.world_ranks(), expected);
  EXPECT_EQ(sub.size(), int(expected.size()));
  EXPECT_EQ(sub.world_ranks()[size_t(sub.rank())], r);
  // A collective inside each half sees only that half.
  int64_t sum = r;
  sub.all_reduce(&sum, 1);
  EXPECT_EQ(sum, std::accumulate(expected.begin(), expected.end(), int64_t(0)));
  // Nested split: everyone alone.
  Comm single = sub.split(sub.rank(), 0);
  EXPECT_EQ(single.size(), 1);
  float x = 3;
  single.all_reduce(&x, 1);
  EXPECT_EQ(x, 3.f);
}

TEST(Split, SubgroupTrafficDoesNotMixWithWorldTraffic) {
  Comm& w = world();
  int p = w.size(), r = w.rank();
  Comm sub = w.split(0, r);  // same members as the world, a separate communicator
  std::vector<float> a(50001), b(50001);
  for (size_t i = 0; i < a.size(); ++i) { a[i] = test::input<float>(r, i); b[i] = test::input<float>(r, i + 5); }
  CommRequest ra = w.all_reduce_async(a.data(), a.size());
  CommRequest rb = sub.all_reduce_async(b.data(), b.size());
  rb.wait();
  ra.wait();
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bad += a[i] != test::expected_sum<float>(p, i);
    bad += b[i] != test::expected_sum<float>(p, i + 5);
  }
  EXPECT_EQ(bad, 0u);
}

// Every way of factoring the world size over the four axes.
std::vector<MeshDegrees> all_meshes(int size) {
  std::vector<MeshDegrees> out;
  for (int dp = 1; dp <= size; ++dp)
    for (int tp = 1; tp <= size; ++tp)
      for (int pp = 1; pp <= size; ++pp)
        for (int cp = 1; cp <= size; ++cp)
          if (dp * tp * pp * cp == size) out.push_back({.dp = dp, .cp = cp, .tp = tp, .pp = pp});
  return out;
}

TEST(Mesh, EveryFactorisationHasTheFormulaCoordinatesAndGroupMembers) {
  Comm& w = world();
  int r = w.rank();
  const MeshAxis axes[] = {MeshAxis::dp, MeshAxis::tp, MeshAxis::pp, MeshAxis::cp};
  for (const MeshDegrees& d : all_meshes(w.size())) {
    std::string name = "dp" + std::to_string(d.dp) + " tp" + std::to_string(d.tp) + " pp" +
                       std::to_string(d.pp) + " cp" + std::to_string(d.cp);
    Mesh mesh(w, d);
    MeshCoords c = mesh_coords(r, d);
    for (MeshAxis a : axes) {
      EXPECT_EQ(mesh.coords()[a], c[a]) << name;
      EXPECT_EQ(mesh.degrees()[a], d[a]) << name;
      const Comm& g = mesh.group({a});
      EXPECT_EQ(g.size(), d[a]) << name << " axis " << mesh_axis_name(a);
      EXPECT_EQ(g.rank(), c[a]) << name << " axis " << mesh_axis_name(a);
      EXPECT_EQ(g.world_ranks(), mesh_group_members(r, d, {a})) << name << " axis " << mesh_axis_name(a);
    }
    const Comm& dpcp = mesh.group({MeshAxis::dp, MeshAxis::cp});
    EXPECT_EQ(dpcp.world_ranks(), mesh_group_members(r, d, {MeshAxis::dp, MeshAxis::cp})) << name;
    EXPECT_EQ(mesh.group({MeshAxis::dp, MeshAxis::tp, MeshAxis::pp, MeshAxis::cp}).size(), w.size());
    // The groups carry traffic: a tp all-reduce sums exactly the tp partners' world ranks.
    int64_t sum = r;
    mesh.group(MeshGroup::tp).all_reduce(&sum, 1);
    auto members = mesh_group_members(r, d, {MeshAxis::tp});
    EXPECT_EQ(sum, std::accumulate(members.begin(), members.end(), int64_t(0))) << name;
  }
}

TEST(Mesh, TwoByTwoTensorTimesData) {
  Comm& w = world();
  if (w.size() != 4) GTEST_SKIP() << "needs 4 ranks";
  Mesh mesh(w, {.dp = 2, .tp = 2});
  int r = w.rank();
  EXPECT_EQ(mesh.rank(MeshGroup::tp), r % 2);
  EXPECT_EQ(mesh.rank(MeshGroup::dp), r / 2);
  EXPECT_EQ(mesh.group(MeshGroup::tp).world_ranks(), (std::vector<int>{r / 2 * 2, r / 2 * 2 + 1}));
  EXPECT_EQ(mesh.group(MeshGroup::dp).world_ranks(), (std::vector<int>{r % 2, r % 2 + 2}));
}

TEST(Mesh, ValidatesBeforeCreatingAnything) {
  Comm& w = world();
  // Same failure on every rank, and no split is started (a started split would hang the next test).
  EXPECT_THROW(Mesh(w, {.dp = w.size() + 1}), std::invalid_argument);
  w.barrier();
}
