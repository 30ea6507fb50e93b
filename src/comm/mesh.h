#pragma once
// The device mesh (DESIGN principle 5): named axes with degrees, passed explicitly, never a
// global. World ranks are laid out tp fastest, then cp, then dp, then pp (Megatron's order):
//     world_rank = tp + TP * (cp + CP * (dp + DP * pp))
// so tensor-parallel partners are neighbours (the chattiest traffic stays closest) and
// pipeline stages are the outermost blocks.
#include <array>
#include <initializer_list>
#include <string>
#include <vector>

#include "comm/comm.h"

namespace ff {

enum class MeshAxis { dp = 0, tp, pp, cp };
constexpr int kMeshAxes = 4;
const char* mesh_axis_name(MeshAxis axis);

struct MeshDegrees {
  int dp = 1;  // data parallel (and the ZeRO shard group)
  int tp = 1;  // tensor (and sequence) parallel
  int pp = 1;  // pipeline stages
  int cp = 1;  // context parallel (ring attention)
  int operator[](MeshAxis axis) const;
  int product() const { return dp * tp * pp * cp; }
};

struct MeshCoords {
  int dp = 0, tp = 0, pp = 0, cp = 0;
  int operator[](MeshAxis axis) const;
};

// ---- pure layout functions (no MPI; unit-tested on their own) ----

// Throws std::invalid_argument naming every degree and the product, e.g.
// "dp (2) x tp (2) x pp (1) x cp (1) = 4 but mpirun started 3 ranks; change --dp/--tp/--pp/--cp or -np".
void check_mesh(const MeshDegrees& degrees, int world_size);
MeshCoords mesh_coords(int world_rank, const MeshDegrees& degrees);
int mesh_rank(const MeshCoords& coords, const MeshDegrees& degrees);
// The world ranks that agree with world_rank on every axis outside `axes`, ascending (which is
// their rank order inside the group).
std::vector<int> mesh_group_members(int world_rank, const MeshDegrees& degrees,
                                    std::initializer_list<MeshAxis> axes);

// ---- the mesh over a live world ----

class Mesh {
 public:
  // Collective over `world`. Validates the degrees before creating anything, then builds the
  // group of every combination of axes (15 sub-communicators) up front: creating groups is
  // collective, and doing it lazily inside an accessor would hang the job the first time only
  // some ranks asked for a group. `world` must outlive the Mesh.
  Mesh(const Comm& world, const MeshDegrees& degrees);

  const MeshDegrees& degrees() const { return degrees_; }
  const MeshCoords& coords() const { return coords_; }
  int degree(MeshAxis axis) const { return degrees_[axis]; }
  int coord(MeshAxis axis) const { return coords_[axis]; }
  const Comm& world() const { return *world_; }

  // The ranks that differ from this one only along `axis`, ranked by their coordinate on it.
  const Comm& group(MeshAxis axis) const;
  // The ranks that differ only along the given axes, e.g. {dp, cp} for ZeRO sharding over
  // context-parallel ranks or for carving out the expert axis. Ranked by world rank.
  const Comm& group(std::initializer_list<MeshAxis> axes) const;

 private:
  static int mask_of(std::initializer_list<MeshAxis> axes);

  const Comm* world_;
  MeshDegrees degrees_;
  MeshCoords coords_;
  std::array<Comm, 1 << kMeshAxes> groups_;  // indexed by the bit mask of the axes
};

}  // namespace ff
