#pragma once
// The part of the model one rank holds under a layout, built the way the trainer builds it (the
// tensor-parallel slicer of tp rank 0, the pipeline split's stage, the ep block of experts), so
// the memory model and the step-time model read the same tensors and widths the engine allocates.
#include <memory>
#include <vector>

#include "model/activations.h"
#include "model/parameters.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/tensor/tensor_plan.h"
#include "plan/layout_spec.h"

namespace ff {

struct RankModel {
  std::unique_ptr<PlanSlicer> slicer;  // null without tp
  ModelParts parts;
  std::vector<ModelChunk> chunks;      // the rank's model chunks in schedule order
  std::unique_ptr<ParamLayout> layout;
  BlockWidths widths{};                // as the model reads them (local_widths)
  int64_t vocab_rows = 0;              // this rank's rows of the embedding or the head
};

RankModel rank_model(const ModelConfig& c, const LayoutSpec& L, int pp_rank);

}  // namespace ff
