#pragma once
// The device mesh (principles 5 and 14, docs/principles.md): named axes with degrees and the groups
// derived from them, passed explicitly, never a global. World ranks are laid out tp fastest, then
// cp, then dp, then pp (Megatron's order):
//     world_rank = tp + TP * (cp + CP * (dp + DP * pp))
// so tensor-parallel partners are neighbours (the chattiest traffic stays closest) and pipeline
// stages are the outermost blocks.
//
// Across nodes the mesh counts positions, not launch ranks: the ranks of one node (nodes.h) take
// consecutive positions, node after node, each node's in launch order (mesh_rank_order), so tp and
// then cp fill a node before dp and pp cross to the next, however the launcher spread the ranks.
// With each node's ranks already consecutive (mpirun's default, and always on one node) a position
// is the launch rank. A layout whose tp groups still span nodes gets a warning (mesh_node_warning).
//
// Derived groups (torchtitan's ParallelDims, Megatron's "parallel folding"):
//   dp_cp  dp x cp flattened: the ranks that hold the same dense parameters and see different
//          tokens; dense gradients are averaged and ZeRO-sharded over it. Rank in it:
//          cp + CP * dp.
//   ep     expert parallel, carved out of dp x cp: consecutive blocks of `ep` ranks of dp_cp
//          (ep coordinate = dp_cp rank % EP), each holding a different share of the experts.
//   edp    expert data parallel, dp x cp / ep: the ranks holding the same experts (edp
//          coordinate = dp_cp rank / EP); expert gradients are averaged and sharded over it.
// Every group's members are in ascending mesh position, and a member's rank in the group is its
// coordinate along the group.
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "comm/comm.h"

namespace ff {

enum class MeshAxis { tp = 0, cp, dp, pp };
constexpr int kMeshAxes = 4;
const char* mesh_axis_name(MeshAxis axis);

// The groups the training code asks for.
enum class MeshGroup { tp, cp, dp, pp, dp_cp, ep, edp, world };
const char* mesh_group_name(MeshGroup g);

struct MeshDegrees {
  int dp = 1;  // data parallel
  int cp = 1;  // context parallel (ring attention)
  int tp = 1;  // tensor (and sequence) parallel
  int pp = 1;  // pipeline stages
  int ep = 1;  // expert parallel: divides dp * cp, not a factor of the world
  int operator[](MeshAxis axis) const;
  int world() const { return dp * cp * tp * pp; }
};

struct MeshCoords {
  int tp = 0, cp = 0, dp = 0, pp = 0;
  int ep = 0, edp = 0;  // derived: (cp + CP * dp) % EP and (cp + CP * dp) / EP
  int operator[](MeshAxis axis) const;
};

// ---- pure layout functions (no MPI; unit-tested on their own) ----

// Throws std::invalid_argument naming every degree, the product and the config keys to change,
// e.g. "dp (2) x cp (1) x tp (2) x pp (1) = 4 but mpirun started 3 ranks; ...", a degree below
// 1, or an ep that does not divide dp x cp.
void check_mesh(const MeshDegrees& degrees, int world_size);
MeshCoords mesh_coords(int world_rank, const MeshDegrees& degrees);
int mesh_rank(const MeshCoords& coords, const MeshDegrees& degrees);  // from tp, cp, dp, pp
// The world ranks of world_rank's group `g` (ascending, = their order in the group).
std::vector<int> mesh_group_members(int world_rank, const MeshDegrees& degrees, MeshGroup g);
// The ranks that agree with world_rank on every axis outside `axes` (ascending).
std::vector<int> mesh_group_members(int world_rank, const MeshDegrees& degrees,
                                    std::initializer_list<MeshAxis> axes);
// The same with the axes as a bit mask (bit i = MeshAxis(i)); mask 0 is world_rank alone.
std::vector<int> mesh_axes_members(int world_rank, const MeshDegrees& degrees, unsigned axis_mask);

// Mesh position -> rank: ranks sorted by node (numbered by first appearance), stable, so a
// layout whose nodes each hold consecutive ranks gets the identity.
std::vector<int> mesh_rank_order(const std::vector<int>& node_of_rank);
// Empty, or a warning naming a tp group that spans nodes (node_of_position: the node of each mesh
// position) and how to keep it inside one.
// order: mesh_rank_order's result, to name the group by its ranks.
std::string mesh_node_warning(const MeshDegrees& degrees, const std::vector<int>& node_of_position,
                              const std::vector<int>& order);

// ---- the mesh over a live world ----

class Mesh {
 public:
  // Validates the degrees against world.size() (throwing the same on every rank) and creates no
  // communicator: each group's is made the first time it is asked for, by its members alone
  // (MPI_Comm_create_group), so a group nobody uses costs nothing and asking for one never
  // involves ranks outside it. `world` must outlive the Mesh. Ranks are ordered node by node
  // (above); world rank 0 prints mesh_node_warning's warning, if any, to stderr.
  Mesh(const Comm& world, const MeshDegrees& degrees);

  const MeshDegrees& degrees() const { return degrees_; }
  const MeshCoords& coords() const { return coords_; }
  const Comm& world() const { return *world_; }
  // This rank's mesh position (its world rank unless the launcher interleaved nodes), the node of
  // each position, and the warning the constructor printed (empty if none).
  int position() const { return position_; }
  const std::vector<int>& position_nodes() const { return position_nodes_; }
  const std::string& node_warning() const { return node_warning_; }
  // Size of a group and this rank's place in it, known without creating its communicator.
  int size(MeshGroup g) const;
  int rank(MeshGroup g) const;

  // The communicator of this rank's group `g`, or of the ranks differing from this one only along
  // `axes`. Created on first use: every member of that group must ask for it, and members must
  // ask for groups they share in the same order (as with any collective). Requests naming the
  // same members share one communicator: group({dp, cp}) is group(MeshGroup::dp_cp), edp is
  // dp_cp when ep = 1, group({tp, dp}) is group({dp}) when tp = 1, all four axes are world().
  const Comm& group(MeshGroup g) const;
  const Comm& group(std::initializer_list<MeshAxis> axes) const;

  // x summed (or max/min) over the ranks that differ from this one only along `axes`; returns x
  // untouched when that group has one rank. The one way the training code reduces a scalar.
  double reduce_scalar(double x, std::initializer_list<MeshAxis> axes,
                       ReduceOp op = ReduceOp::sum) const;

 private:
  const Comm& group_of_mask(unsigned mask) const;
  // The communicator for a request (an axis mask, or 16 + a named group), made on first use.
  const Comm& cached(int request, const std::function<std::vector<int>()>& members_of) const;

  const Comm* world_;
  MeshDegrees degrees_;
  std::vector<int> order_;           // mesh position -> rank in world_
  std::vector<int> position_nodes_;  // mesh position -> node
  int position_ = 0;
  MeshCoords coords_;
  std::string node_warning_;
  mutable std::map<int, Comm> groups_;  // by canonical key (mesh.cpp), which names the members
  mutable std::map<int, const Comm*> by_request_;  // request -> its communicator (may be world)
};

}  // namespace ff
