#include "comm/mesh.h"

#include <stdexcept>

namespace ff {

namespace {
// Cache keys: 1..15 the bit mask of an axis set, 16 + g a named group. Also the creation tag.
int key_of(std::initializer_list<MeshAxis> axes) {
  int mask = 0;
  for (MeshAxis axis : axes) mask |= 1 << int(axis);
  if (mask == 0) throw std::invalid_argument("Mesh::group: no axes given; name at least one of tp, cp, dp, pp");
  return mask;
}
int key_of(MeshGroup g) { return 16 + int(g); }
}  // namespace

Mesh::Mesh(const Comm& world, const MeshDegrees& degrees) : world_(&world), degrees_(degrees) {
  check_mesh(degrees, world.size());  // before any collective: a bad mesh fails on every rank alike
  coords_ = mesh_coords(world.rank(), degrees);
}

int Mesh::size(MeshGroup g) const {
  const MeshDegrees& d = degrees_;
  switch (g) {
    case MeshGroup::tp: return d.tp;
    case MeshGroup::cp: return d.cp;
    case MeshGroup::dp: return d.dp;
    case MeshGroup::pp: return d.pp;
    case MeshGroup::dp_cp: return d.dp * d.cp;
    case MeshGroup::ep: return d.ep;
    case MeshGroup::edp: return d.dp * d.cp / d.ep;
    case MeshGroup::world: return d.world();
  }
  throw std::invalid_argument("unknown MeshGroup");
}

int Mesh::rank(MeshGroup g) const {
  const MeshCoords& c = coords_;
  switch (g) {
    case MeshGroup::tp: return c.tp;
    case MeshGroup::cp: return c.cp;
    case MeshGroup::dp: return c.dp;
    case MeshGroup::pp: return c.pp;
    case MeshGroup::dp_cp: return c.cp + degrees_.cp * c.dp;
    case MeshGroup::ep: return c.ep;
    case MeshGroup::edp: return c.edp;
    case MeshGroup::world: return world_->rank();
  }
  throw std::invalid_argument("unknown MeshGroup");
}

const Comm& Mesh::cached(int key, const std::vector<int>& members) const {
  auto it = groups_.find(key);
  if (it == groups_.end()) it = groups_.emplace(key, world_->subgroup(members, key)).first;
  return it->second;
}

const Comm& Mesh::group(MeshGroup g) const {
  if (g == MeshGroup::world) return *world_;
  return cached(key_of(g), mesh_group_members(world_->rank(), degrees_, g));
}

const Comm& Mesh::group(std::initializer_list<MeshAxis> axes) const {
  return cached(key_of(axes), mesh_group_members(world_->rank(), degrees_, axes));
}

double Mesh::reduce_scalar(double x, std::initializer_list<MeshAxis> axes, ReduceOp op) const {
  if (mesh_group_members(world_->rank(), degrees_, axes).size() == 1) return x;
  group(axes).all_reduce(&x, 1, op);
  return x;
}

}  // namespace ff
