#pragma once
// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) with optional sequence parallelism
// (Korthikanti et al. 2022) is applied from outside the model: tensor_plan.h cuts the parameters,
// tensor_hooks.h implements the model's parallel operations with regions.h, and tensor_replicas.h
// hands the parameter groups the tensors whose replicas each saw only part of the work, to sum.
// This file keeps checkpoints layout-free: full tensors are assembled from, and cut back into, the
// ranks' blocks.
#include <memory>
#include <vector>

#include "comm/comm.h"
#include "model/param_access.h"
#include "model/parameters.h"

namespace ff {

// Checkpoints: every tp rank's flat block (`local`, layout sliced for that rank) into the full
// tensors' flat layout of the same model parts (a pipeline stage's, or by default all), on every
// rank (collective over tp).
void assemble_full_tensors(const Comm& tp, const ModelConfig& c, const ParamLayout& local_layout,
                           const float* local, float* full, const ModelParts* parts = nullptr);
// This rank's blocks out of a full flat buffer.
void extract_local_tensors(const ParamLayout& local_layout, const ParamLayout& full_layout,
                           const float* full, float* local);

}  // namespace ff
