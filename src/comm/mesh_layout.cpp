// The pure half of mesh.h: rank <-> coordinate arithmetic and validation, no MPI.
#include <stdexcept>
#include <string>

#include "comm/mesh.h"

namespace ff {
namespace {

// Fastest-varying first: the Megatron order tp -> cp -> dp -> pp.
constexpr MeshAxis kRankOrder[kMeshAxes] = {MeshAxis::tp, MeshAxis::cp, MeshAxis::dp, MeshAxis::pp};

int& coord_ref(MeshCoords& c, MeshAxis axis) {
  switch (axis) {
    case MeshAxis::dp: return c.dp;
    case MeshAxis::tp: return c.tp;
    case MeshAxis::pp: return c.pp;
    case MeshAxis::cp: return c.cp;
  }
  throw std::invalid_argument("unknown MeshAxis");
}

}  // namespace

const char* mesh_axis_name(MeshAxis axis) {
  static const char* names[] = {"dp", "tp", "pp", "cp"};
  return names[int(axis)];
}

int MeshDegrees::operator[](MeshAxis axis) const {
  switch (axis) {
    case MeshAxis::dp: return dp;
    case MeshAxis::tp: return tp;
    case MeshAxis::pp: return pp;
    case MeshAxis::cp: return cp;
  }
  throw std::invalid_argument("unknown MeshAxis");
}

int MeshCoords::operator[](MeshAxis axis) const {
  MeshCoords copy = *this;
  return coord_ref(copy, axis);
}

void check_mesh(const MeshDegrees& d, int world_size) {
  for (MeshAxis axis : {MeshAxis::dp, MeshAxis::tp, MeshAxis::pp, MeshAxis::cp}) {
    if (d[axis] < 1) {
      throw std::invalid_argument(std::string(mesh_axis_name(axis)) + " degree " +
                                  std::to_string(d[axis]) +
                                  " is invalid: every mesh degree must be at least 1 (1 turns "
                                  "that parallelism off); change --" + mesh_axis_name(axis));
    }
  }
  // Compare in 64 bits: four large degrees could overflow int and wrap onto world_size.
  long long product = (long long)d.dp * d.tp * d.pp * d.cp;
  if (product != world_size) {
    throw std::invalid_argument(
        "dp (" + std::to_string(d.dp) + ") x tp (" + std::to_string(d.tp) + ") x pp (" +
        std::to_string(d.pp) + ") x cp (" + std::to_string(d.cp) + ") = " + std::to_string(product) +
        " but mpirun started " + std::to_string(world_size) + " rank" + (world_size == 1 ? "" : "s") +
        "; change --dp/--tp/--pp/--cp or -np so that the product equals the number of ranks");
  }
}

MeshCoords mesh_coords(int world_rank, const MeshDegrees& d) {
  check_mesh(d, d.product());  // degrees >= 1
  if (world_rank < 0 || world_rank >= d.product()) {
    throw std::invalid_argument("mesh_coords: rank " + std::to_string(world_rank) +
                                " is outside a mesh of " + std::to_string(d.product()) + " ranks");
  }
  MeshCoords c;
  int rest = world_rank;
  for (MeshAxis axis : kRankOrder) {
    coord_ref(c, axis) = rest % d[axis];
    rest /= d[axis];
  }
  return c;
}

int mesh_rank(const MeshCoords& c, const MeshDegrees& d) {
  int rank = 0;
  for (int i = kMeshAxes - 1; i >= 0; --i) {
    MeshAxis axis = kRankOrder[i];
    if (c[axis] < 0 || c[axis] >= d[axis]) {
      throw std::invalid_argument(std::string("mesh_rank: ") + mesh_axis_name(axis) + " coordinate " +
                                  std::to_string(c[axis]) + " is outside [0, " +
                                  std::to_string(d[axis]) + ")");
    }
    rank = rank * d[axis] + c[axis];
  }
  return rank;
}

std::vector<int> mesh_group_members(int world_rank, const MeshDegrees& d,
                                    std::initializer_list<MeshAxis> axes) {
  MeshCoords me = mesh_coords(world_rank, d);
  std::vector<int> members;
  for (int r = 0; r < d.product(); ++r) {
    MeshCoords c = mesh_coords(r, d);
    bool same = true;
    for (MeshAxis axis : {MeshAxis::dp, MeshAxis::tp, MeshAxis::pp, MeshAxis::cp}) {
      bool free_axis = false;
      for (MeshAxis a : axes) free_axis |= a == axis;
      if (!free_axis && c[axis] != me[axis]) same = false;
    }
    if (same) members.push_back(r);
  }
  return members;
}

}  // namespace ff
