#pragma once
// What a rank's model state is in a sharded checkpoint's terms: each run of its flat buffers that
// a ModelState hands out (checkpoint_runs) cut at tensor boundaries into pieces "elements
// [begin, end) of tensor T's block B". The block is the box of the whole tensor this rank's view
// covers (a tp row or column block, or all of it), so the pieces need no gathering to be saved
// and any other layout finds them by box intersection.
#include <set>
#include <string>
#include <vector>

#include "ckpt/sharded_box.h"
#include "ckpt/sharded_reader.h"
#include "model/parameters.h"
#include "parallel/model_state.h"
#include "parallel/pipeline/stage_split.h"

namespace ff {

// The three buffers of the state, each saved under its own tensor names.
enum class StateBuffer { params, adam_m, adam_v };
// "params/model.norm.weight", "adam_m/...", "adam_v/...".
std::string checkpoint_tensor_name(StateBuffer b, const std::string& param);

struct TensorPiece {
  const ParamView* view;
  Box block;                   // the view's box in the whole tensor's matrix
  int64_t begin = 0, end = 0;  // elements of block, row-major
  float* data = nullptr;       // holds those elements, contiguous
};

// The view's region of the whole tensor: rows [row0, row0 + rows) x cols [col0, col0 + cols) of
// a matrix; (1, n) for a vector, whose slice offset is row0 (ParamView::full_index).
Box view_block(const ParamView& v);

// runs (flat coordinates of layout, ascending or not) cut at every view they cross; views in
// `skip` (by name) are left out.
std::vector<TensorPiece> pieces_of_runs(const ParamLayout& layout, const std::vector<StateRun>& runs,
                                        const std::set<std::string>& skip = {});

// The tensors this rank holds but another rank saves: a tp-replicated block (the norms, a kv head
// shared by several ranks) is saved by the lowest tp rank holding it, a tied embedding on the
// last pipeline stage by the first stage. split: null without pipeline parallelism.
std::set<std::string> saved_elsewhere(const ModelConfig& c, const ParamLayout& local, int tp_size,
                                      int tp_rank, const StageSplit* split, int pp_rank);

// One piece of a save: elements [begin, end) of `box` of the tensor, row-major, at data.
struct SavePiece {
  std::string tensor;
  std::vector<int64_t> shape;  // the whole tensor's
  Box box;
  int64_t begin = 0, end = 0;
  const float* data = nullptr;
};
// This rank's pieces of every buffer, for a save (skip: saved_elsewhere).
std::vector<SavePiece> state_save_pieces(const ParamLayout& layout, const StateRuns& runs,
                                         const std::set<std::string>& skip);
// Fills every run of `runs` (what the state holds) from the checkpoint, by box intersection.
void read_state_pieces(ShardedCheckpointReader& r, const ParamLayout& layout, const StateRuns& runs,
                       bool params_only = false);

}  // namespace ff
