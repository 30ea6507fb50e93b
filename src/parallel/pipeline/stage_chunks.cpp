#include "parallel/pipeline/stage_chunks.h"

#include <stdexcept>
#include <string>

#include "model/linear.h"

namespace ff {

ModelParts parts_of_chunks(const std::vector<ModelChunk>& chunks) {
  ModelParts p;
  p.embedding = p.head = false;
  for (const ModelChunk& ch : chunks) {
    for (int l = ch.first_layer; l < ch.last_layer; ++l) p.layers.push_back(l);
    p.embedding |= ch.embedding;
    p.head |= ch.head;
  }
  return p;
}

StageChunks::StageChunks(Llama& model, std::vector<ModelChunk> chunks)
    : model_(model), chunks_(std::move(chunks)), stashes_(chunks_.size()) {
  const ParamLayout& layout = model_.layout();
  for (size_t k = 0; k < chunks_.size(); ++k) {
    const ModelChunk& ch = chunks_[k];
    std::string missing;
    for (int l = ch.first_layer; l < ch.last_layer && missing.empty(); ++l)
      if (layout.block_segment(l).count == 0) missing = "layer " + std::to_string(l);
    if (ch.embedding && layout.embedding_segment().count == 0) missing = "the embedding";
    if (ch.head && layout.head_segment().count == 0) missing = "the head";
    if (!missing.empty())
      throw std::invalid_argument("pipeline chunk " + std::to_string(k) + " runs " + missing +
                                  ", which the model does not hold: build the Llama with parts_of_chunks(chunks)");
  }
  // One chunk: its first stash exists from the start, so its bytes are in the ledger at once.
  if (chunks_.size() == 1) stash(0, 0);
}

StageChunks::~StageChunks() = default;

StageChunks::Stash& StageChunks::stash(int chunk, int slot) {
  auto& pool = stashes_[size_t(chunk)];
  if (pool.size() <= size_t(slot)) pool.resize(size_t(slot) + 1);
  auto& s = pool[size_t(slot)];
  if (!s) {
    const ModelChunk& ch = chunks_[size_t(chunk)];
    s = std::make_unique<Stash>();
    s->acts = model_.make_activations(ch.first_layer, ch.last_layer, ch.head);
  }
  return *s;
}

double StageChunks::forward(ParamSource& src, GradSink& sink, int chunk, int slot, const float* input,
                            float* output, const MicroBatch& mb, bool with_grad) {
  model_.check_shape(mb.B, mb.T);
  const ModelChunk& ch = chunks_[size_t(chunk)];
  const ParamLayout& layout = model_.layout();
  Stash& s = stash(chunk, slot);
  Activations& acts = *s.acts;
  const int N = mb.B * mb.T;
  const size_t boundary = boundary_floats(mb.B, mb.T);
  model_.mark_documents(acts, mb.tokens, mb.B, mb.T);  // every stage reads the documents off the tokens
  if (ch.embedding) model_.embed(src, acts, mb.tokens, N, ch.first_layer);
  else copy_rows(acts.block(0).x_in, input, boundary);
  if (!ch.head) {
    model_.blocks_forward(src, acts, ch.first_layer, ch.last_layer, output, mb.B, mb.T, ParamSegment{});
    return 0;
  }
  model_.blocks_forward(src, acts, ch.first_layer, ch.last_layer, acts.final_out(), mb.B, mb.T,
                        layout.head_segment());
  if (!with_grad) return model_.head_loss(src, acts, mb.targets, N);
  const double total = model_.head_forward_backward(src, sink, acts, mb.targets, N, mb.grad_scale,
                                                    layout.block_segment(ch.last_layer - 1), &s.tied_emb_grad);
  if (!ch.embedding) {
    // A pipeline's last chunk: other micro-batches run before this one's backward.
    if (s.head_grad.size() == 0) s.head_grad.allocate(boundary, MemCategory::activations);
    copy_rows(s.head_grad.data(), model_.residual_grad(), boundary);
    if (s.tied_emb_grad) sink.release(layout.embedding_segment()), s.tied_emb_grad = nullptr;
  }
  return total;
}

void StageChunks::backward(ParamSource& src, GradSink& sink, int chunk, int slot, const float* grad_output,
                           float* grad_input, const MicroBatch& mb, BackwardPart part) {
  const ModelChunk& ch = chunks_[size_t(chunk)];
  const ParamLayout& layout = model_.layout();
  Stash& s = stash(chunk, slot);
  const int N = mb.B * mb.T, first = ch.first_layer, last = ch.last_layer;
  const size_t boundary = boundary_floats(mb.B, mb.T), blocks = model_.deferred_floats(last - first, N);
  float* d_resid = model_.residual_grad();
  const ParamSegment before = ch.embedding ? layout.embedding_segment() : ParamSegment{};
  if (part == BackwardPart::input && s.deferred.size() == 0)
    s.deferred.allocate(blocks + (ch.embedding ? boundary : 0), MemCategory::activations);
  // The embedding's gradient input, kept after the blocks' deferred parts.
  float* emb_input = s.deferred.size() ? s.deferred.data() + blocks : nullptr;
  if (part == BackwardPart::weight) {
    model_.blocks_backward(src, sink, *s.acts, first, last, mb.B, mb.T, before, part, s.deferred.data());
    if (ch.embedding) {
      copy_rows(d_resid, emb_input, boundary);
      model_.embedding_backward(sink, nullptr, mb.tokens, N);
    }
    return;
  }
  // The whole model's forward left the head's gradient in the residual gradient itself.
  if (ch.head && !ch.embedding) copy_rows(d_resid, s.head_grad.data(), boundary);
  else if (!ch.head) copy_rows(d_resid, grad_output, boundary);
  model_.blocks_backward(src, sink, *s.acts, first, last, mb.B, mb.T, before, part, s.deferred.data());
  if (!ch.embedding) {
    copy_rows(grad_input, d_resid, boundary);
  } else if (part == BackwardPart::input) {
    // Releasing the embedding before the blocks' weight pass would tell a data-parallel sink
    // that every gradient is final; it waits for the weight pass.
    copy_rows(emb_input, d_resid, boundary);
  } else {
    model_.embedding_backward(sink, s.tied_emb_grad, mb.tokens, N);
    s.tied_emb_grad = nullptr;
  }
}

}  // namespace ff
