#pragma once
// Parameter groups (principle 13, docs/principles.md): every segment of the model's flat layout
// belongs to one group, and each group has its own reduce/shard communicator and its own element
// types. Dense parameters are averaged and ZeRO-sharded over dp x cp, expert parameters over edp;
// one ModelState holds one state per group (grouped_state.h), each laid out in the group's own flat
// coordinates: its segments back to back, so its buffers, and the ZeRO formulas (16Ψ, 4Ψ + 12Ψ/N,
// ...), are those of the group's Ψ and N alone.
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/param_access.h"
#include "model/parameters.h"

namespace ff {

class Comm;
class Mesh;

// A tensor (or any run of elements sharing AdamW's decay flag) in the model's flat layout.
struct ParamTensorSpan {
  size_t offset, count;
  bool decay;  // matrices decay, norms do not
};

// A range of the flat layout whose elements count `weight` times in the gradient norm: 1/r for a
// tensor held whole by r ranks, so the sum over those ranks counts it once.
struct WeightedRange {
  size_t offset, count;
  double weight;
};

// A tensor several ranks hold whole (tensor parallelism's replicas: the RMSNorm weights, a kv
// head shared by the query heads of several ranks). Its copies must stay equal, so their
// gradients are summed when each copy saw only part of the work, and the gradient norm counts
// each copy 1/replicas so that the sum over the holders counts every element once.
struct ReplicaRange {
  size_t offset, count;            // flat layout, inside one of the group's segments
  int replicas = 1;                // ranks holding a copy
  const Comm* sum_over = nullptr;  // the copies' gradients are partial sums over it; null: each whole
};

// What a group is made of. Tests build these by hand; the trainer derives them from the model's
// ParamLayout (model_param_groups).
struct ParamGroupSpec {
  std::string name;
  ParamGroupKind kind = ParamGroupKind::dense;
  std::vector<ParamSegment> segments;      // of the flat layout, ascending, disjoint
  std::vector<std::string> segment_names;  // for traces; empty: "<name> segment i"
  std::vector<ParamTensorSpan> tensors;    // tile the segments exactly
  const Comm* comm = nullptr;              // reduced and sharded over it; null: one process
  std::vector<ReplicaRange> replicas;      // ascending; summed before the reduction over comm
  // The gradient norm's squares are summed over these ranks too: they hold other parameters of
  // the same group (expert parallelism's ep group: the other experts). Null: none.
  const Comm* norm_sum = nullptr;
  DType param = DType::f32;                // the working copy the model reads
  DType master = DType::f32;               // what AdamW updates
};

// A group's coordinates: its segments back to back ("local"), each remembering where it sits in
// the model's flat layout ("flat").
class GroupLayout {
 public:
  // model: the layout the parameters are initialised from (null: the caller loads them).
  // Throws std::invalid_argument naming the problem for unordered segments, tensors that do not
  // tile them, or element types other than f32.
  GroupLayout(const ParamGroupSpec& spec, const ParamLayout* model);
  const std::string& name() const { return name_; }
  size_t total() const { return total_; }
  const std::vector<ParamSegment>& segments() const { return local_; }  // local coordinates
  const std::vector<ParamSegment>& flat_segments() const { return flat_; }
  const std::string& segment_name(size_t i) const { return names_[i]; }
  const std::vector<ParamTensorSpan>& tensors() const { return tensors_; }  // local coordinates
  const std::vector<ReplicaRange>& replicas() const { return replicas_; }   // local coordinates
  // Weight of each replicated element in the gradient norm (1 / replicas), local coordinates.
  const std::vector<WeightedRange>& norm_weights() const { return norm_weights_; }
  // The index of the segment at `flat_offset` in the model's layout, or -1 if not in this group.
  int find(size_t flat_offset) const;
  // Local and flat coordinates coincide: this group holds the whole layout.
  bool identity() const { return identity_; }
  // The group's elements, initialised as the whole model would be (needs `model`).
  void init_parameters(float* local, const ModelConfig& c, uint64_t seed) const;
  // Flat elements [lo, lo + n) of one of the group's segments into dst (local coordinates), for a
  // ZeRO-3 shard's chunk.
  void init_range(float* dst, size_t local_lo, size_t n, const ModelConfig& c, uint64_t seed) const;

 private:
  size_t to_flat(size_t local) const;
  int find_containing(size_t flat_offset) const;

  std::string name_;
  std::vector<ParamSegment> local_, flat_;
  std::vector<std::string> names_;
  std::vector<ParamTensorSpan> tensors_;
  std::vector<ReplicaRange> replicas_;
  std::vector<WeightedRange> norm_weights_;
  size_t total_ = 0;
  bool identity_ = false;
  const ParamLayout* model_;
};

// The model's groups over the mesh (null: one process): dense over dp x cp, expert over edp; a
// group with no segments is left out. A communicator is asked for only when its group has more
// than one rank. Each of `replicas` (ascending) goes to the group holding it.
std::vector<ParamGroupSpec> model_param_groups(const ParamLayout& layout, const Mesh* mesh,
                                               const std::vector<ReplicaRange>& replicas = {});

}  // namespace ff
