// The mesh: rank <-> coordinate arithmetic, derived groups and validation (pure functions, no
// communication), then the live Mesh that makes each group's communicator on first use.
#include "comm/mesh.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>

#include "comm/nodes.h"

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
  const std::pair<const char*, int> degrees[] = {
      {"dp", d.dp}, {"cp", d.cp}, {"tp", d.tp}, {"pp", d.pp}, {"ep", d.ep}};
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

std::vector<int> mesh_rank_order(const std::vector<int>& node_of_rank) {
  const std::vector<int> node = number_nodes(node_of_rank);
  std::vector<int> order(node.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return node[size_t(a)] < node[size_t(b)]; });
  return order;
}

std::string mesh_node_warning(const MeshDegrees& d, const std::vector<int>& node_of_position,
                              const std::vector<int>& order) {
  if (d.tp == 1) return "";
  for (int first = 0; first < d.world(); first += d.tp) {  // tp is fastest: its groups are runs
    std::vector<int> nodes;
    for (int p = first; p < first + d.tp; ++p)
      if (std::find(nodes.begin(), nodes.end(), node_of_position[size_t(p)]) == nodes.end())
        nodes.push_back(node_of_position[size_t(p)]);
    if (nodes.size() == 1) continue;
    std::string ranks, where;
    for (int p = first; p < first + d.tp; ++p) ranks += (p > first ? ", " : "") + n(order[size_t(p)]);
    for (size_t i = 0; i < nodes.size(); ++i) where += (i ? (i + 1 == nodes.size() ? " and " : ", ") : "") + n(nodes[i]);
    int smallest_node = d.world();
    for (int node : nodes) {
      const long count = std::count(node_of_position.begin(), node_of_position.end(), node);
      smallest_node = std::min(smallest_node, int(count));
    }
    return "tp " + n(d.tp) + " puts the tp group of ranks {" + ranks + "} on nodes " + where +
           ": tensor parallelism's all-reduces (several per layer) then cross the network between nodes; "
           "choose --tp dividing the ranks per node (" + n(smallest_node) +
           " here) and let dp or pp cross nodes, or start more ranks per node";
  }
  return "";
}

// ---- the mesh over a live world ----

namespace {
constexpr unsigned kAllAxes = (1u << kMeshAxes) - 1;

unsigned mask_of(std::initializer_list<MeshAxis> axes) {
  unsigned mask = 0;
  for (MeshAxis axis : axes) mask |= 1u << int(axis);
  if (mask == 0)
    throw std::invalid_argument("Mesh::group: no axes given; name at least one of tp, cp, dp, pp");
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
  const std::vector<int>& world_nodes = world_rank_nodes();
  std::vector<int> node_of_rank;
  for (int w : world.world_ranks()) node_of_rank.push_back(world_nodes.empty() ? 0 : world_nodes[size_t(w)]);
  node_of_rank = number_nodes(node_of_rank);
  order_ = mesh_rank_order(node_of_rank);
  for (int p = 0; p < world.size(); ++p) {
    position_nodes_.push_back(node_of_rank[size_t(order_[size_t(p)])]);
    if (order_[size_t(p)] == world.rank()) position_ = p;
  }
  coords_ = mesh_coords(position_, degrees);
  node_warning_ = mesh_node_warning(degrees, position_nodes_, order_);
  if (!node_warning_.empty() && world.rank() == 0) std::fprintf(stderr, "warning: %s\n", node_warning_.c_str());
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
    case MeshGroup::world: return world_->rank();  // the world Comm keeps the launch order
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
  const std::vector<int> members = members_of();  // mesh positions
  int key = named_key;
  for (unsigned mask = 0; mask <= kAllAxes; ++mask) {
    if (mesh_axes_members(position_, degrees_, mask) == members) {
      key = int(mask);
      break;
    }
  }
  const Comm* comm = world_;  // a group of every rank is the world itself
  if (members.size() != size_t(world_->size())) {
    std::vector<int> ranks;  // in group order: a member's group rank is its coordinate
    for (int p : members) ranks.push_back(order_[size_t(p)]);
    auto it = groups_.find(key);
    if (it == groups_.end()) it = groups_.emplace(key, world_->subgroup(ranks, key)).first;
    comm = &it->second;
  }
  by_request_[named_key] = comm;
  return *comm;
}

const Comm& Mesh::group(MeshGroup g) const {
  const int mask = mask_of(g);
  if (mask >= 0) return group_of_mask(unsigned(mask));
  return cached(16 + int(g), [&] { return mesh_group_members(position_, degrees_, g); });
}

const Comm& Mesh::group(std::initializer_list<MeshAxis> axes) const { return group_of_mask(mask_of(axes)); }

const Comm& Mesh::group_of_mask(unsigned mask) const {
  return cached(int(mask), [&] { return mesh_axes_members(position_, degrees_, mask); });
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
