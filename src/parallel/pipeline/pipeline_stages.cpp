#include "parallel/pipeline/pipeline_stages.h"

namespace ff {

StageSplit split_model(const ModelConfig& c, int ranks, int chunks) {
  double block = double(c.dim) * (c.qkv_dim() + c.n_heads * c.head_dim()) + 3.0 * c.dim * c.ffn_dim;
  if (c.qkv_bias) block += c.qkv_dim();
  return split_stages(c.n_layers, ranks, chunks, 0.0, double(c.vocab_size) * c.dim / block);
}

std::vector<ModelChunk> chunks_of_rank(const StageSplit& split, int rank) {
  std::vector<ModelChunk> chunks;
  for (int k = 0; k < split.chunks; ++k) {
    const PipelineStage& s = split.stages[size_t(k * split.ranks + rank)];
    chunks.push_back({s.first_layer, s.last_layer, s.embedding, s.head});
  }
  return chunks;
}

ModelParts parts_of_rank(const StageSplit& split, int rank) { return parts_of_chunks(chunks_of_rank(split, rank)); }

LlamaStages::LlamaStages(Llama& model, std::vector<ModelChunk> chunks, ModelState& state, int microbatches)
    : chunks_(model, std::move(chunks)), state_(state), m_(microbatches) {
  const size_t v = chunks_.chunks().size();
  free_.resize(v);
  next_slot_.assign(v, 0);
  slot_of_.assign(size_t(microbatches) * v, -1);
}

void LlamaStages::begin_step(const int32_t* tokens, const int32_t* targets, int B, int T, float grad_scale) {
  tokens_ = tokens, targets_ = targets, B_ = B, T_ = T, scale_ = grad_scale;
  loss_ = 0;
}

MicroBatch LlamaStages::batch(int microbatch) const {
  const size_t at = size_t(microbatch) * B_ * T_;
  return {tokens_ + at, targets_ + at, B_, T_, scale_};
}

GradSink& LlamaStages::sink(int microbatch) {
  // Only the step's last micro-batch releases final gradients: data-parallel communication
  // starts then (every micro-batch does under ZeRO-2/3, whose sinks ignore this).
  return state_.grads(microbatch + 1 == m_);
}

int LlamaStages::take_slot(int microbatch, int chunk) {
  auto& pool = free_[size_t(chunk)];
  int s;
  if (pool.empty()) s = next_slot_[size_t(chunk)]++;
  else s = pool.back(), pool.pop_back();
  slot_of_[size_t(microbatch) * free_.size() + size_t(chunk)] = s;
  return s;
}

int LlamaStages::give_back_slot(int microbatch, int chunk) {
  const int s = slot_of_[size_t(microbatch) * free_.size() + size_t(chunk)];
  free_[size_t(chunk)].push_back(s);
  return s;
}

size_t LlamaStages::input_size(int) const { return chunks_.boundary_floats(B_, T_); }
size_t LlamaStages::output_size(int) const { return chunks_.boundary_floats(B_, T_); }

void LlamaStages::forward(int microbatch, int chunk, const float* input, float* output) {
  const int s = take_slot(microbatch, chunk);
  loss_ += chunks_.forward(state_.params(), sink(microbatch), chunk, s, input, output, batch(microbatch), true);
}

void LlamaStages::backward(int microbatch, int chunk, const float* grad_output, float* grad_input) {
  const int s = give_back_slot(microbatch, chunk);
  chunks_.backward(state_.params(), sink(microbatch), chunk, s, grad_output, grad_input, batch(microbatch));
}

void LlamaStages::backward_input(int microbatch, int chunk, const float* grad_output, float* grad_input) {
  const int s = slot_of_[size_t(microbatch) * free_.size() + size_t(chunk)];
  chunks_.backward(state_.params(), sink(microbatch), chunk, s, grad_output, grad_input, batch(microbatch),
                        BackwardPart::input);
}

void LlamaStages::backward_weight(int microbatch, int chunk) {
  const int s = give_back_slot(microbatch, chunk);
  chunks_.backward(state_.params(), sink(microbatch), chunk, s, nullptr, nullptr, batch(microbatch),
                        BackwardPart::weight);
}

double pipeline_forward_loss(StageChunks& stage, ParamSource& params, const Comm& pipe, const int32_t* tokens,
                             const int32_t* targets, int B, int T) {
  const int p = pipe.size(), r = pipe.rank(), v = int(stage.chunks().size());
  const size_t n = stage.boundary_floats(B, T);
  std::vector<float> in(n), out(n);
  FlatGrads no_grads(nullptr);
  const MicroBatch mb{tokens, targets, B, T, 0.0f};
  double loss = 0;
  for (int s = 0; s < p * v; ++s) {
    if (s % p != r) continue;
    const int chunk = s / p;
    if (s > 0) pipe.recv(in.data(), n, (s - 1) % p, s);
    const bool last = s + 1 == p * v;
    loss += stage.forward(params, no_grads, chunk, 0, s > 0 ? in.data() : nullptr, last ? nullptr : out.data(),
                                mb, false);
    if (!last) pipe.send(out.data(), n, (s + 1) % p, s + 1);
  }
  pipe.all_reduce(&loss, 1);
  return loss;
}

}  // namespace ff
