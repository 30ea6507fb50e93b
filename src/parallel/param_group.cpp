#include "parallel/param_group.h"

#include <stdexcept>

#include "comm/comm.h"
#include "comm/mesh.h"

namespace ff {

namespace {

[[noreturn]] void bad_group(const std::string& group, const std::string& what) {
  throw std::invalid_argument("parameter group '" + group + "': " + what);
}

}  // namespace

GroupLayout::GroupLayout(const ParamGroupSpec& spec, const ParamLayout* model)
    : name_(spec.name), flat_(spec.segments), model_(model) {
  if (spec.param != DType::f32 || spec.master != DType::f32)
    bad_group(name_, std::string("parameters ") + dtype_name(spec.param) + ", master " +
                         dtype_name(spec.master) +
                         ": only f32 working copies and masters are implemented; set both to f32");
  if (!spec.segment_names.empty() && spec.segment_names.size() != flat_.size())
    bad_group(name_, "segment_names must name every segment or none");
  identity_ = true;
  size_t prev_end = 0;
  for (size_t i = 0; i < flat_.size(); ++i) {
    const ParamSegment& f = flat_[i];
    if (f.count == 0) bad_group(name_, "segment " + std::to_string(i) + " is empty; leave it out");
    if (i > 0 && f.offset < prev_end)
      bad_group(name_, "segment " + std::to_string(i) + " at offset " + std::to_string(f.offset) +
                           " overlaps or precedes the one before; list segments ascending and disjoint");
    prev_end = f.end();
    identity_ = identity_ && f.offset == total_;
    local_.push_back({total_, f.count});
    names_.push_back(spec.segment_names.empty() ? name_ + " segment " + std::to_string(i)
                                                : spec.segment_names[i]);
    total_ += f.count;
  }
  if (model_) identity_ = identity_ && total_ == model_->total();
  // Tensors: each inside one segment, together covering every element once.
  size_t covered = 0;
  for (const ParamTensorSpan& t : spec.tensors) {
    if (t.count == 0) continue;
    const int s = find_containing(t.offset);
    if (s < 0 || t.offset + t.count > flat_[size_t(s)].end())
      bad_group(name_, "tensor at offset " + std::to_string(t.offset) + " (" + std::to_string(t.count) +
                           " elements) does not lie inside one of the group's segments");
    tensors_.push_back({local_[size_t(s)].offset + (t.offset - flat_[size_t(s)].offset), t.count, t.decay});
    covered += t.count;
  }
  if (covered != total_)
    bad_group(name_, "its tensors cover " + std::to_string(covered) + " elements but its segments hold " +
                         std::to_string(total_) + "; the tensors must tile the segments");
  prev_end = 0;
  for (const ReplicaRange& r : spec.replicas) {
    const std::string at = "replica range at offset " + std::to_string(r.offset);
    const int s = find_containing(r.offset);
    if (r.count == 0 || s < 0 || r.offset + r.count > flat_[size_t(s)].end())
      bad_group(name_, at + " (" + std::to_string(r.count) +
                           " elements) does not lie inside one of the group's segments");
    if (r.offset < prev_end)
      bad_group(name_, at + " overlaps the one before; list them ascending and disjoint");
    if (r.replicas < 1) bad_group(name_, at + " has " + std::to_string(r.replicas) + " replicas; at least 1");
    if (r.sum_over && r.sum_over->size() != r.replicas)
      bad_group(name_, at + " is held by " + std::to_string(r.replicas) + " ranks but summed over " +
                           std::to_string(r.sum_over->size()) + "; sum over exactly the ranks holding it");
    prev_end = r.offset + r.count;
    const size_t local = local_[size_t(s)].offset + (r.offset - flat_[size_t(s)].offset);
    replicas_.push_back({local, r.count, r.replicas, r.sum_over});
    if (r.replicas > 1) norm_weights_.push_back({local, r.count, 1.0 / r.replicas});
  }
}

int GroupLayout::find(size_t flat_offset) const {
  for (size_t i = 0; i < flat_.size(); ++i)
    if (flat_[i].offset == flat_offset) return int(i);
  return -1;
}

int GroupLayout::find_containing(size_t flat_offset) const {
  for (size_t i = 0; i < flat_.size(); ++i)
    if (flat_offset >= flat_[i].offset && flat_offset < flat_[i].end()) return int(i);
  return -1;
}

size_t GroupLayout::to_flat(size_t local) const {
  for (size_t i = 0; i < local_.size(); ++i)
    if (local >= local_[i].offset && local < local_[i].end())
      return flat_[i].offset + (local - local_[i].offset);
  throw std::logic_error("GroupLayout: local offset " + std::to_string(local) + " outside group " + name_);
}

void GroupLayout::init_range(float* dst, size_t local_lo, size_t n, const ModelConfig& c,
                             uint64_t seed) const {
  if (!model_)
    throw std::logic_error("parameter group '" + name_ +
                           "' was built without a model layout to initialise "
                           "from; fill its checkpoint_runs and call after_load instead");
  if (n == 0) return;
  const size_t lo = to_flat(local_lo);
  init_parameter_range(dst, lo, lo + n, *model_, c, seed);
}

void GroupLayout::init_parameters(float* local, const ModelConfig& c, uint64_t seed) const {
  for (size_t i = 0; i < local_.size(); ++i)
    init_range(local + local_[i].offset, local_[i].offset, local_[i].count, c, seed);
}

std::vector<ParamGroupSpec> model_param_groups(const ParamLayout& layout, const Mesh* mesh,
                                               const std::vector<ReplicaRange>& replicas) {
  std::vector<ParamGroupSpec> groups(2);
  size_t placed = 0;
  groups[0].name = "dense", groups[0].kind = ParamGroupKind::dense;
  groups[1].name = "expert", groups[1].kind = ParamGroupKind::expert;
  for (size_t i = 0; i < layout.segments().size(); ++i) {
    const ParamSegment& seg = layout.segments()[i];
    if (seg.count == 0) continue;
    ParamGroupSpec& g = groups[layout.segment_group(i) == ParamGroupKind::dense ? 0 : 1];
    g.segments.push_back(seg);
    g.segment_names.push_back(layout.segment_name(i));
    for (const ParamView& v : layout.views())
      if (v.offset >= seg.offset && v.offset < seg.end())
        g.tensors.push_back({v.offset, v.numel, v.is_matrix});
    for (const ReplicaRange& r : replicas)
      if (r.offset >= seg.offset && r.offset < seg.end()) g.replicas.push_back(r), ++placed;
  }
  if (placed != replicas.size())
    throw std::invalid_argument(std::to_string(replicas.size() - placed) + " of " +
                                std::to_string(replicas.size()) +
                                " replica ranges lie outside the model's parameters; build them from this layout");
  std::vector<ParamGroupSpec> present;
  for (ParamGroupSpec& g : groups) {
    if (g.segments.empty()) continue;
    const MeshGroup over = g.kind == ParamGroupKind::dense ? MeshGroup::dp_cp : MeshGroup::edp;
    if (mesh && mesh->size(over) > 1) g.comm = &mesh->group(over);
    if (mesh && g.kind == ParamGroupKind::expert && mesh->size(MeshGroup::ep) > 1)
      g.norm_sum = &mesh->group(MeshGroup::ep);
    present.push_back(std::move(g));
  }
  return present;
}

}  // namespace ff
