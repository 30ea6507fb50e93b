#pragma once
// Pipeline parallelism applied to the model (Huang et al. 2019, Narayanan et al. 2021, Qi et al.
// 2023): which chunks of the model a pipeline rank runs, the PipelineStageCompute that lets the
// executor drive them (over StageChunks, stage_chunks.h, which keeps the per-micro-batch state),
// and a forward-only pass for evaluation.
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "model/llama.h"
#include "parallel/model_state.h"
#include "parallel/pipeline/pipeline_executor.h"
#include "parallel/pipeline/stage_chunks.h"
#include "parallel/pipeline/stage_split.h"

namespace ff {

// The split of the model over p ranks x v chunks, priced by FLOPs: a block costs 1, the LM head
// and loss vocab * dim / (a block's weights), the embedding lookup nothing.
StageSplit split_model(const ModelConfig& c, int ranks, int chunks);
// Rank r's chunks, in order (chunk k = virtual stage k * p + r).
std::vector<ModelChunk> chunks_of_rank(const StageSplit& split, int rank);
ModelParts parts_of_rank(const StageSplit& split, int rank);

// One rank's chunks for one optimizer step. Each (micro-batch, chunk) gets an activation stash
// from a free list when its forward starts and returns it after its last backward action, so the
// stashes a rank ever allocates are the schedule's peak in flight.
class LlamaStages final : public PipelineStageCompute {
 public:
  // model: built with parts_of_chunks(chunks).
  LlamaStages(Llama& model, std::vector<ModelChunk> chunks, ModelState& state, int microbatches);
  StageChunks& chunks() { return chunks_; }
  // batch: this rank's micro-batches for the step, back to back.
  void begin_step(const int32_t* tokens, const int32_t* targets, int B, int T, float grad_scale);
  double loss_sum() const { return loss_; }  // this rank's share: nonzero on the last stage

  size_t input_size(int chunk) const override;
  size_t output_size(int chunk) const override;
  void forward(int microbatch, int chunk, const float* input, float* output) override;
  void backward(int microbatch, int chunk, const float* grad_output, float* grad_input) override;
  void backward_input(int microbatch, int chunk, const float* grad_output, float* grad_input) override;
  void backward_weight(int microbatch, int chunk) override;

 private:
  MicroBatch batch(int microbatch) const;
  GradSink& sink(int microbatch);
  int take_slot(int microbatch, int chunk);
  int give_back_slot(int microbatch, int chunk);

  StageChunks chunks_;
  ModelState& state_;
  int m_;
  const int32_t *tokens_ = nullptr, *targets_ = nullptr;
  int B_ = 0, T_ = 0;
  float scale_ = 0;
  double loss_ = 0;
  std::vector<std::vector<int>> free_;  // per chunk: stash indices not in use
  std::vector<int> next_slot_;          // per chunk: stashes made so far
  std::vector<int> slot_of_;            // microbatch * chunks + chunk -> its stash
};

// Sum of token losses of one micro-batch through every stage, without gradients (evaluation):
// virtual stage by virtual stage, blocking sends and receives over `pipe`. Every rank of the
// group calls it; the loss is summed onto every rank.
double pipeline_forward_loss(StageChunks& stage, ParamSource& params, const Comm& pipe,
                             const int32_t* tokens, const int32_t* targets, int B, int T);

}  // namespace ff
