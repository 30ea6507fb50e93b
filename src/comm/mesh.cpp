#include "comm/mesh.h"

#include <functional>
#include <stdexcept>

namespace ff {

namespace {
constexpr unsigned kAllAxes = (1u << kMeshAxes) - 1;

unsigned mask_of(std::initializer_list<MeshAxis> axes) {
  unsigned mask = 0;
  for (MeshAxis axis : axes) mask |= 1u << int(axis);
  if (mask == 0) throw std::invalid_argument("Mesh::group: no axes given; name at least one of tp, cp, dp, pp");
  return mask;
}

// The axis set of a named group, if it has one (ep and edp do not).
int mask_of(MeshGroup g) {
  switch (g) {
    case MeshGroup::tp: return 1 << int(MeshAxis::tp);
    case MeshGroup::cp: return 1 << int(MeshAxis::cp);
    case MeshGroup::dp: return 1 << int(MeshAxis::dp);
    case MeshGroup::pp: return 1 << int(MeshAxis::pp);
    case MeshGroup::dp_cp: return (1 << int(MeshAxis::dp)) | (1 << int(MeshAxis::cp));
    case MeshGroup::world: return int(kAllAxes);
    case MeshGroup::ep:
    case MeshGroup::edp: return -1;
  }
  throw std::invalid_argument("unknown MeshGroup");
}
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

// One communicator per member set; a set of every rank is the world. Otherwise its key, which is
// also the creation tag, is the smallest axis mask (0..15) whose group has exactly these members,
// else 16 + the named group. Every member
// derives the same key: an axis mask's groups partition the world, so if the members form that
// group for one of them they form it for all. Two different groups that share a rank therefore
// never share a key, which is what MPI_Comm_create_group's tag must guarantee.
const Comm& Mesh::cached(int named_key, const std::function<std::vector<int>()>& members_of) const {
  auto asked = by_request_.find(named_key);
  if (asked != by_request_.end()) return *asked->second;
  const std::vector<int> members = members_of();
  const int me = world_->rank();
  int key = named_key;
  for (unsigned mask = 0; mask <= kAllAxes; ++mask) {
    if (mesh_axes_members(me, degrees_, mask) == members) {
      key = int(mask);
      break;
    }
  }
  const Comm* comm = world_;  // a group of every rank is the world itself (members ascending)
  if (members.size() != size_t(world_->size())) {
    auto it = groups_.find(key);
    if (it == groups_.end()) it = groups_.emplace(key, world_->subgroup(members, key)).first;
    comm = &it->second;
  }
  by_request_[named_key] = comm;
  return *comm;
}

const Comm& Mesh::group(MeshGroup g) const {
  const int mask = mask_of(g);
  if (mask >= 0) return group_of_mask(unsigned(mask));
  return cached(16 + int(g), [&] { return mesh_group_members(world_->rank(), degrees_, g); });
}

const Comm& Mesh::group(std::initializer_list<MeshAxis> axes) const { return group_of_mask(mask_of(axes)); }

const Comm& Mesh::group_of_mask(unsigned mask) const {
  return cached(int(mask), [&] { return mesh_axes_members(world_->rank(), degrees_, mask); });
}

double Mesh::reduce_scalar(double x, std::initializer_list<MeshAxis> axes, ReduceOp op) const {
  int members = 1;
  const unsigned mask = mask_of(axes);
  for (int a = 0; a < kMeshAxes; ++a)
    if (mask & (1u << a)) members *= degrees_[MeshAxis(a)];
  if (members == 1) return x;
  group(axes).all_reduce(&x, 1, op);
  return x;
}

}  // namespace ff
