#include "plan/node_first.h"

#include <algorithm>

namespace ff {

bool NodeFirstForm::applies(Coll op, double bytes, int n) const {
  if (n != nodes * per_node || nodes < 2 || per_node < 2) return false;
  switch (op) {
    case Coll::all_reduce: return bytes >= double(thresholds.hierarchical_min_bytes);
    case Coll::reduce_scatter: return bytes >= double(thresholds.hierarchical_reduce_scatter_min_bytes);
    case Coll::all_gather: return bytes >= double(thresholds.hierarchical_all_gather_min_bytes);
    default: return false;
  }
}

double NodeFirstForm::seconds(Coll op, double bytes) const {
  const CommOpKind kind = op == Coll::all_reduce       ? CommOpKind::all_reduce
                          : op == Coll::reduce_scatter ? CommOpKind::reduce_scatter
                                                       : CommOpKind::all_gather;
  const int blocks = node_first_block_count(kind, size_t(bytes));
  const double block = bytes / blocks, piece = block / per_node;  // a block; its 1/L that crosses
  double stages[3] = {0, 0, 0};  // an op's stages in order; the reduce-scatter and all-gather have two
  if (op == Coll::all_reduce) {  // reduce-scatter inside, all-reduce of the own piece across, all-gather inside
    stages[0] = inside.seconds(Coll::reduce_scatter, block, per_node);
    stages[1] = across.seconds(Coll::all_reduce, piece, nodes);
    stages[2] = inside.seconds(Coll::all_gather, block, per_node);
  } else if (op == Coll::reduce_scatter) {  // the node's sums of the peers' chunks, then each to its owner
    stages[0] = inside.seconds(Coll::reduce_scatter, block, per_node);
    stages[1] = across.seconds(Coll::reduce_scatter, piece, nodes);
  } else {  // the own chunk across to the peers, then every chunk held to the node's other ranks
    stages[0] = across.seconds(Coll::all_gather, piece, nodes);
    stages[1] = inside.seconds(Coll::all_gather, block, per_node);
  }
  double sum = 0, slowest = 0;
  for (double t : stages) sum += t, slowest = std::max(slowest, t);
  return sum + (blocks - 1) * slowest;
}

std::shared_ptr<const NodeFirstForm> node_first_form(const LinkClass& same_node, const LinkClass& across_nodes, int n,
                                                     int on_one_node, int per_node) {
  if (on_one_node < 2 || n % on_one_node != 0 || n / on_one_node < 2) return nullptr;
  auto f = std::make_shared<NodeFirstForm>();
  f->inside = same_node;
  f->nodes = n / on_one_node, f->per_node = on_one_node;
  f->across = across_nodes.shared_by(f->nodes, 1, per_node);
  return f;
}

}  // namespace ff
