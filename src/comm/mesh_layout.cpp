// The pure half of mesh.h: rank <-> coordinate arithmetic, derived groups and validation, no MPI.
#include <stdexcept>
#include <string>

#include "comm/mesh.h"

namespace ff {
namespace {

// Fastest-varying first: the Megatron order tp -> cp -> dp -> pp (the enum's order).
constexpr MeshAxis kRankOrder[kMeshAxes] = {MeshAxis::tp, MeshAxis::cp, MeshAxis::dp, MeshAxis::pp};

int& coord_ref(MeshCoords& c, MeshAxis axis) {
  switch (axis) {
    case MeshAxis::tp: return c.tp;
    case MeshAxis::cp: return c.cp;
    case MeshAxis::dp: return c.dp;
    case MeshAxis::pp: return c.pp;
  }
  throw std::invalid_argument("unknown MeshAxis");
}

std::string n(int x) { return std::to_string(x); }

}  // namespace

const char* mesh_axis_name(MeshAxis axis) {
  static const char* names[] = {"tp", "cp", "dp", "pp"};
  return names[int(axis)];
}

const char* mesh_group_name(MeshGroup g) {
  static const char* names[] = {"tp", "cp", "dp", "pp", "dp_cp", "ep", "edp", "world"};
  return names[int(g)];
}

int MeshDegrees::operator[](MeshAxis axis) const {
  switch (axis) {
    case MeshAxis::tp: return tp;
    case MeshAxis::cp: return cp;
    case MeshAxis::dp: return dp;
    case MeshAxis::pp: return pp;
  }
  throw std::invalid_argument("unknown MeshAxis");
}

int MeshCoords::operator[](MeshAxis axis) const {
  MeshCoords copy = *this;
  return coord_ref(copy, axis);
}

void check_mesh(const MeshDegrees& d, int world_size) {
  const std::pair<const char*, int> degrees[] = {{"dp", d.dp}, {"cp", d.cp}, {"tp", d.tp}, {"pp", d.pp}, {"ep", d.ep}};
  for (const auto& [name, value] : degrees)
    if (value < 1)
      throw std::invalid_argument(std::string(name) + " degree " + n(value) +
                                  " is invalid: every mesh degree must be at least 1 (1 turns that "
                                  "parallelism off); change --" + name);
  // Compare in 64 bits: four large degrees could overflow int and wrap onto world_size.
  const long long product = (long long)d.dp * d.cp * d.tp * d.pp;
  if (product != world_size)
    throw std::invalid_argument("dp (" + n(d.dp) + ") x cp (" + n(d.cp) + ") x tp (" + n(d.tp) + ") x pp (" +
                                n(d.pp) + ") = " + std::to_string(product) + " but mpirun started " +
                                n(world_size) + " rank" + (world_size == 1 ? "" : "s") +
                                "; change --dp/--cp/--tp/--pp or -np so that the product equals the "
                                "number of ranks");
  if ((d.dp * d.cp) % d.ep != 0)
    throw std::invalid_argument("ep (" + n(d.ep) + ") must divide dp x cp (" + n(d.dp) + " x " + n(d.cp) +
                                " = " + n(d.dp * d.cp) +
                                "): experts are spread over the ranks that share the dense parameters; "
                                "change --ep, --dp or --cp");
}

MeshCoords mesh_coords(int world_rank, const MeshDegrees& d) {
  check_mesh(d, d.world());
  if (world_rank < 0 || world_rank >= d.world())
    throw std::invalid_argument("mesh_coords: rank " + n(world_rank) + " is outside a mesh of " +
                                n(d.world()) + " ranks");
  MeshCoords c;
  int rest = world_rank;
  for (MeshAxis axis : kRankOrder) {
    coord_ref(c, axis) = rest % d[axis];
    rest /= d[axis];
  }
  const int dp_cp = c.cp + d.cp * c.dp;
  c.ep = dp_cp % d.ep;
  c.edp = dp_cp / d.ep;
  return c;
}

int mesh_rank(const MeshCoords& c, const MeshDegrees& d) {
  int rank = 0;
  for (int i = kMeshAxes - 1; i >= 0; --i) {
    const MeshAxis axis = kRankOrder[i];
    if (c[axis] < 0 || c[axis] >= d[axis])
      throw std::invalid_argument(std::string("mesh_rank: ") + mesh_axis_name(axis) + " coordinate " +
                                  n(c[axis]) + " is outside [0, " + n(d[axis]) + ")");
    rank = rank * d[axis] + c[axis];
  }
  return rank;
}

namespace {
// Whether rank `other` is in `me`'s group g.
bool same_group(const MeshCoords& me, const MeshCoords& other, MeshGroup g) {
  const bool same_tp = me.tp == other.tp, same_cp = me.cp == other.cp, same_dp = me.dp == other.dp,
             same_pp = me.pp == other.pp;
  switch (g) {
    case MeshGroup::tp: return same_cp && same_dp && same_pp;
    case MeshGroup::cp: return same_tp && same_dp && same_pp;
    case MeshGroup::dp: return same_tp && same_cp && same_pp;
    case MeshGroup::pp: return same_tp && same_cp && same_dp;
    case MeshGroup::dp_cp: return same_tp && same_pp;
    case MeshGroup::ep: return same_tp && same_pp && me.edp == other.edp;
    case MeshGroup::edp: return same_tp && same_pp && me.ep == other.ep;
    case MeshGroup::world: return true;
  }
  throw std::invalid_argument("unknown MeshGroup");
}
}  // namespace

std::vector<int> mesh_group_members(int world_rank, const MeshDegrees& d, MeshGroup g) {
  const MeshCoords me = mesh_coords(world_rank, d);
  std::vector<int> members;
  for (int r = 0; r < d.world(); ++r)
    if (same_group(me, mesh_coords(r, d), g)) members.push_back(r);
  return members;
}

std::vector<int> mesh_group_members(int world_rank, const MeshDegrees& d,
                                    std::initializer_list<MeshAxis> axes) {
  unsigned mask = 0;
  for (MeshAxis axis : axes) mask |= 1u << int(axis);
  return mesh_axes_members(world_rank, d, mask);
}

std::vector<int> mesh_axes_members(int world_rank, const MeshDegrees& d, unsigned axis_mask) {
  const MeshCoords me = mesh_coords(world_rank, d);
  std::vector<int> members;
  for (int r = 0; r < d.world(); ++r) {
    const MeshCoords c = mesh_coords(r, d);
    bool same = true;
    for (MeshAxis axis : kRankOrder)
      if (!(axis_mask & (1u << int(axis))) && c[axis] != me[axis]) same = false;
    if (same) members.push_back(r);
  }
  return members;
}

}  // namespace ff
