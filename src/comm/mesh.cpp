#include "comm/mesh.h"

#include <stdexcept>
#include <string>

namespace ff {

Mesh::Mesh(const Comm& world, const MeshDegrees& degrees) : world_(&world), degrees_(degrees) {
  check_mesh(degrees, world.size());  // before any collective: a bad mesh fails on every rank alike
  coords_ = mesh_coords(world.rank(), degrees);
  const MeshAxis all[kMeshAxes] = {MeshAxis::dp, MeshAxis::tp, MeshAxis::pp, MeshAxis::cp};
  for (int mask = 1; mask < (1 << kMeshAxes); ++mask) {
    // color = the coordinates on the axes outside the group, linearised; key = world rank, so
    // the group is ranked in world order (for one axis: by the coordinate on that axis).
    int color = 0;
    for (MeshAxis axis : all) {
      if (!(mask & (1 << int(axis)))) color = color * degrees[axis] + coords_[axis];
    }
    groups_[size_t(mask)] = world.split(color, world.rank());
  }
}

int Mesh::mask_of(std::initializer_list<MeshAxis> axes) {
  int mask = 0;
  for (MeshAxis axis : axes) mask |= 1 << int(axis);
  if (mask == 0) {
    throw std::invalid_argument("Mesh::group: no axes given; name at least one of dp, tp, pp, cp");
  }
  return mask;
}

const Comm& Mesh::group(MeshAxis axis) const { return groups_[size_t(1 << int(axis))]; }

const Comm& Mesh::group(std::initializer_list<MeshAxis> axes) const {
  return groups_[size_t(mask_of(axes))];
}

}  // namespace ff
