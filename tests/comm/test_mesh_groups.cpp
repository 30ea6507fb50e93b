// The mesh over a live world, run under mpirun -np 1..8: for every mesh of the world size (every
// factorisation and every ep), each group's communicator has the closed-form members, size and
// rank and carries traffic; groups are shared between requests naming the same members and are
// made by their members alone; reduce_scalar sums over axis sets in closed form.
#include <gtest/gtest.h>

#include <numeric>

#include "mesh_closed_form.h"
#include "mpi_test_util.h"

using namespace ff;
using ff::test::ClosedForm;
using ff::test::world;

namespace {
int64_t sum_of(const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), int64_t(0)); }
}  // namespace

TEST(MeshGroups, EveryGroupOfEveryMeshHasTheClosedFormMembersAndCarriesTraffic) {
  Comm& w = world();
  const int r = w.rank();
  for (const MeshDegrees& m : test::all_meshes(w.size())) {
    const std::string name = test::mesh_name(m);
    const ClosedForm f(m, r);
    Mesh mesh(w, m);
    for (MeshGroup g : test::kAllGroups) {
      const std::vector<int> want = f.members(g);
      const Comm& c = mesh.group(g);
      ASSERT_EQ(c.world_ranks(), want) << name << " " << mesh_group_name(g);
      EXPECT_EQ(c.size(), int(want.size())) << name << " " << mesh_group_name(g);
      EXPECT_EQ(c.rank(), f.coordinate(g)) << name << " " << mesh_group_name(g);
      EXPECT_EQ(mesh.size(g), c.size()) << name << " " << mesh_group_name(g);
      EXPECT_EQ(mesh.rank(g), c.rank()) << name << " " << mesh_group_name(g);
      int64_t sum = r;
      c.all_reduce(&sum, 1);
      EXPECT_EQ(sum, sum_of(want)) << name << " " << mesh_group_name(g);
    }
  }
}

TEST(MeshGroups, RequestsNamingTheSameMembersShareOneCommunicator) {
  Comm& w = world();
  for (const MeshDegrees& m : test::all_meshes(w.size())) {
    const std::string name = test::mesh_name(m);
    Mesh mesh(w, m);
    EXPECT_EQ(&mesh.group({MeshAxis::dp, MeshAxis::cp}), &mesh.group(MeshGroup::dp_cp)) << name;
    EXPECT_EQ(&mesh.group({MeshAxis::cp, MeshAxis::dp}), &mesh.group(MeshGroup::dp_cp)) << name;
    EXPECT_EQ(&mesh.group({MeshAxis::tp}), &mesh.group(MeshGroup::tp)) << name;
    EXPECT_EQ(&mesh.group({MeshAxis::pp, MeshAxis::tp, MeshAxis::cp, MeshAxis::dp}), &w) << name;
    EXPECT_EQ(&mesh.group(MeshGroup::world), &w) << name;
    if (m.ep == 1) {
      EXPECT_EQ(&mesh.group(MeshGroup::edp), &mesh.group(MeshGroup::dp_cp)) << name;
    }
    if (m.ep == m.dp * m.cp) {
      EXPECT_EQ(&mesh.group(MeshGroup::ep), &mesh.group(MeshGroup::dp_cp)) << name;
    }
    if (m.tp == 1) {
      EXPECT_EQ(&mesh.group({MeshAxis::tp, MeshAxis::dp}), &mesh.group(MeshGroup::dp)) << name;
    }
    // Different members, different communicators.
    if (m.tp > 1 && m.dp > 1) {
      EXPECT_NE(&mesh.group(MeshGroup::tp), &mesh.group(MeshGroup::dp)) << name;
    }
  }
}

TEST(MeshGroups, AGroupIsMadeByItsMembersAlone) {
  Comm& w = world();
  const int size = w.size(), r = w.rank();
  // tp 2 (when even) and dp the rest: only the ranks with dp coordinate 0 ask for their tp group.
  const int tp = size % 2 == 0 ? 2 : 1;
  Mesh mesh(w, {.dp = size / tp, .tp = tp});
  const ClosedForm f(mesh.degrees(), r);
  // Everyone else first blocks in a receive that a dp-0 rank sends only after it made and used its
  // group: if making it needed any other rank, the job would hang here and the watchdog would end
  // it. The 30 s watchdog is far above the milliseconds this takes.
  w.set_options({.timeout_s = 30});
  if (f.d == 0) {
    const Comm& g = mesh.group(MeshGroup::tp);
    int64_t sum = r;
    g.all_reduce(&sum, 1);
    EXPECT_EQ(sum, sum_of(f.members(MeshGroup::tp)));
    for (int d = 1; d < mesh.degrees().dp; ++d) {
      int64_t token = sum;
      w.send(&token, 1, f.rank(f.t, 0, d, 0), 5);
    }
  } else {
    int64_t token = -1;
    w.recv(&token, 1, f.rank(f.t, 0, 0, 0), 5);
    EXPECT_EQ(token, sum_of(ClosedForm(mesh.degrees(), f.rank(f.t, 0, 0, 0)).members(MeshGroup::tp)));
    // Now these ranks make theirs, again among themselves.
    int64_t sum = r;
    mesh.group(MeshGroup::tp).all_reduce(&sum, 1);
    EXPECT_EQ(sum, sum_of(f.members(MeshGroup::tp)));
  }
  w.set_options({.timeout_s = 60});
  w.barrier();
}

TEST(MeshGroups, ReduceScalarOverAxisSetsIsTheClosedFormSum) {
  Comm& w = world();
  const int r = w.rank();
  for (const MeshDegrees& m : test::all_meshes(w.size())) {
    if (m.ep != 1) continue;  // ep does not enter reduce_scalar
    const std::string name = test::mesh_name(m);
    const ClosedForm f(m, r);
    Mesh mesh(w, m);
    const double x = 1.5 + r;  // exact in double: the sums are exact whatever the order
    auto sum = [&](unsigned mask) {
      std::vector<int> members = f.members(mask);
      return 1.5 * double(members.size()) + double(sum_of(members));
    };
    const unsigned tp = 1u << int(MeshAxis::tp), cp = 1u << int(MeshAxis::cp), dp = 1u << int(MeshAxis::dp),
                   pp = 1u << int(MeshAxis::pp);
    EXPECT_EQ(mesh.reduce_scalar(x, {MeshAxis::tp}), sum(tp)) << name;
    EXPECT_EQ(mesh.reduce_scalar(x, {MeshAxis::dp, MeshAxis::cp}), sum(dp | cp)) << name;
    EXPECT_EQ(mesh.reduce_scalar(x, {MeshAxis::pp, MeshAxis::tp}), sum(pp | tp)) << name;
    EXPECT_EQ(mesh.reduce_scalar(x, {MeshAxis::tp, MeshAxis::cp, MeshAxis::dp, MeshAxis::pp}), sum(15))
        << name;
    const std::vector<int> dp_members = f.members(dp);
    EXPECT_EQ(mesh.reduce_scalar(x, {MeshAxis::dp}, ReduceOp::max), 1.5 + dp_members.back()) << name;
    EXPECT_EQ(mesh.reduce_scalar(x, {MeshAxis::dp}, ReduceOp::min), 1.5 + dp_members.front()) << name;
  }
}

TEST(MeshGroups, TwoByTwoTensorTimesData) {
  Comm& w = world();
  if (w.size() != 4) GTEST_SKIP() << "needs 4 ranks";
  Mesh mesh(w, {.dp = 2, .tp = 2});
  int r = w.rank();
  EXPECT_EQ(mesh.rank(MeshGroup::tp), r % 2);
  EXPECT_EQ(mesh.rank(MeshGroup::dp), r / 2);
  EXPECT_EQ(mesh.group(MeshGroup::tp).world_ranks(), (std::vector<int>{r / 2 * 2, r / 2 * 2 + 1}));
  EXPECT_EQ(mesh.group(MeshGroup::dp).world_ranks(), (std::vector<int>{r % 2, r % 2 + 2}));
}

TEST(MeshGroups, ValidatesBeforeCreatingAnything) {
  Comm& w = world();
  // Same failure on every rank, and no group is started (a started creation would hang the next test).
  EXPECT_THROW(Mesh(w, {.dp = w.size() + 1}), std::invalid_argument);
  EXPECT_THROW(Mesh(w, {.dp = w.size(), .ep = w.size() + 1}), std::invalid_argument);
  w.barrier();
}
