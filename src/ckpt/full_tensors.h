#pragma once
// The whole model's flat parameters gathered from any layout, on every rank: a tp rank's blocks
// (cut by parallel/tensor/tensor_plan.h), an ep rank's experts (ModelParts::expert_first/count)
// and a pipeline rank's stage, each over its own group. ParallelModel::full_params
// (train/parallelize.h), by which the tests compare layouts, runs them in that order. Checkpoints
// never gather: each rank saves and loads only its own pieces (state_pieces.h).
#include "comm/comm.h"
#include "model/parameters.h"
#include "parallel/pipeline/stage_split.h"

namespace ff {

// Whole tensors of `from`'s views into `to`'s views of the same name (those present in both).
void copy_views_by_name(const ParamLayout& from, const float* src, const ParamLayout& to, float* dst);

// Every tp rank's flat block (`local`, layout sliced for that rank) into the full tensors' flat
// layout of the same model parts (a pipeline stage's, or by default all), on every rank
// (collective over tp).
void assemble_full_tensors(const Comm& tp, const ModelConfig& c, const ParamLayout& local_layout,
                           const float* local, float* full, const ModelParts* parts = nullptr);

// Every tensor of `local` into `all` (laid out by all_layout: the same parts, all experts); each
// MoE block's expert segment gathered over ep, whose ranks hold consecutive, equal shares.
void assemble_experts(const Comm& ep, const ParamLayout& local_layout, const float* local,
                      const ParamLayout& all_layout, float* all);

// Every stage's tensors (flat in its own unsliced layout) into the whole model's flat layout, on
// every rank of `pipe` (collective).
void assemble_stages(const Comm& pipe, const ModelConfig& c, const StageSplit& split,
                     const float* mine, float* full);

}  // namespace ff
