#include "ckpt/state_pieces.h"

#include <algorithm>
#include <stdexcept>

#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/tensor/tensor_plan.h"

namespace ff {

std::string checkpoint_tensor_name(StateBuffer b, const std::string& param) {
  switch (b) {
    case StateBuffer::params:
      return "params/" + param;
    case StateBuffer::adam_m:
      return "adam_m/" + param;
    case StateBuffer::adam_v:
      return "adam_v/" + param;
  }
  throw std::logic_error("checkpoint_tensor_name: unknown buffer");
}

Box view_block(const ParamView& v) {
  if (v.shape.size() < 2) return {0, 1, v.row0, v.row0 + int64_t(v.numel)};
  if (v.shape.size() > 2) throw std::logic_error("view_block: " + v.name + " has more than two dimensions");
  return {v.row0, v.row0 + v.shape[0], v.col0, v.col0 + v.shape[1]};
}

std::vector<TensorPiece> pieces_of_runs(const ParamLayout& layout, const std::vector<StateRun>& runs,
                                        const std::set<std::string>& skip) {
  std::vector<TensorPiece> out;
  for (const StateRun& run : runs)
    for (const ParamView& v : layout.views()) {
      const size_t lo = std::max(run.flat, v.offset), hi = std::min(run.flat + run.count, v.offset + v.numel);
      if (lo >= hi || skip.count(v.name)) continue;
      out.push_back(
          {&v, view_block(v), int64_t(lo - v.offset), int64_t(hi - v.offset), run.data + (lo - run.flat)});
    }
  return out;
}

std::set<std::string> saved_elsewhere(const ModelConfig& c, const ParamLayout& local, int tp_size,
                                      int tp_rank, const StageSplit* split, int pp_rank) {
  std::set<std::string> skip, mine;
  for (const ParamView& v : local.views()) mine.insert(v.name);
  // Tensor names are the whole model's on every stage, so a name an earlier stage holds is a copy.
  if (split)
    for (int r = 0; r < pp_rank; ++r) {
      const ModelParts parts = parts_of_rank(*split, r);
      const ParamLayout theirs(c, nullptr, &parts);  // named: a temporary would die before the loop
      for (const ParamView& v : theirs.views())
        if (mine.count(v.name)) skip.insert(v.name);
    }
  if (tp_size > 1)
    for (const ParamView& v : local.views()) {
      if (v.replicas <= 1) continue;
      for (int r = 0; r < tp_rank; ++r) {
        const TensorSlice s = PlanSlicer(c, tp_size, r).slice(v.name, v.full_shape);
        if (s.row0 == v.row0 && s.col0 == v.col0) skip.insert(v.name);
      }
    }
  return skip;
}

namespace {
constexpr StateBuffer kBuffers[] = {StateBuffer::params, StateBuffer::adam_m, StateBuffer::adam_v};
const std::vector<StateRun>& runs_of(const StateRuns& r, StateBuffer b) {
  return b == StateBuffer::params ? r.params : b == StateBuffer::adam_m ? r.m : r.v;
}
}  // namespace

std::vector<SavePiece> state_save_pieces(const ParamLayout& layout, const StateRuns& runs,
                                         const std::set<std::string>& skip) {
  std::vector<SavePiece> out;
  for (StateBuffer b : kBuffers)
    for (const TensorPiece& p : pieces_of_runs(layout, runs_of(runs, b), skip))
      out.push_back(
          {checkpoint_tensor_name(b, p.view->name), p.view->full_shape, p.block, p.begin, p.end, p.data});
  return out;
}

void read_state_pieces(ShardedCheckpointReader& r, const ParamLayout& layout, const StateRuns& runs,
                       bool params_only) {
  std::vector<ReadRequest> requests;
  for (StateBuffer b : kBuffers) {
    if (params_only && b != StateBuffer::params) continue;
    for (const TensorPiece& p : pieces_of_runs(layout, runs_of(runs, b))) {
      const std::string name = checkpoint_tensor_name(b, p.view->name);
      const auto more = flat_read_requests(name, p.block, p.begin, p.end, TypedPtr(p.data));
      requests.insert(requests.end(), more.begin(), more.end());
    }
  }
  r.read(requests);
}

}  // namespace ff
