#include <cstring>

#include "model/linear.h"
#include "model/llama.h"

// The model as pipeline chunks: forward and backward of a run of blocks for one micro-batch,
// between boundary activations, each micro-batch in its own stash. The whole model is the one
// chunk that holds the embedding and the head; forward_backward is chunk_forward + chunk_backward.
namespace ff {

size_t Llama::boundary_floats(int B, int T) const { return resid_rows(B * T) * size_t(cfg_.dim); }

void Llama::blocks_forward(ParamSource& src, int first, int last, float* out, int B, int T,
                           const ParamSegment& after) {
  for (int l = first; l < last; ++l) {
    const ParamSegment seg = layout_.block_segment(l);
    const ParamSegment next = l + 1 < last ? layout_.block_segment(l + 1) : after;
    float* o = l + 1 < last ? acts(l + 1).x_in : out;
    block_forward(src.acquire(seg, next).f32(), l, o, B, T);
    src.release(seg);
  }
}

void Llama::blocks_backward(ParamSource& src, GradSink& sink, int first, int last, int B, int T,
                            const ParamSegment& before, BackwardPart part) {
  const size_t per_block = deferred_floats_per_block(B * T);
  for (int l = last - 1; l >= first; --l) {
    const ParamSegment seg = layout_.block_segment(l);
    const ParamSegment next = l > first ? layout_.block_segment(l - 1) : before;
    const float* P = src.acquire(seg, next).f32();
    float* deferred = part == BackwardPart::all ? nullptr : slot_->deferred.data() + size_t(l - first) * per_block;
    if (part == BackwardPart::weight) {
      block_weight_grads(P, sink.acquire(seg).f32(), l, B, T, deferred);
      sink.release(seg);
    } else {
      // The input pass touches no gradient of the sink: everything it owes is deferred.
      float* G = part == BackwardPart::all ? sink.acquire(seg).f32() : nullptr;
      recompute_block(P, l, B, T);
      block_backward(P, G, l, B, T, deferred);
      if (G) sink.release(seg);
    }
    src.release(seg);
  }
}

double Llama::chunk_forward(ParamSource& src, GradSink& sink, int chunk, int slot,
                            const float* input, float* output, const MicroBatch& mb, bool with_grad) {
  check_shape(mb.B, mb.T);
  const ModelChunk& ch = chunks_[size_t(chunk)];
  Slot& s = select(chunk, slot);
  const int N = mb.B * mb.T;
  const size_t boundary = boundary_floats(mb.B, mb.T);
  if (ch.embedding) embed(src, mb.tokens, N, ch.first_layer);
  else copy_rows(acts(ch.first_layer).x_in, input, boundary);
  if (!ch.head) {
    blocks_forward(src, ch.first_layer, ch.last_layer, output, mb.B, mb.T, ParamSegment{});
    return 0;
  }
  blocks_forward(src, ch.first_layer, ch.last_layer, s.acts->final_out(), mb.B, mb.T, layout_.head_segment());
  if (!with_grad) {
    head_forward(acquire_head(src, ParamSegment{}), 0, N);
    release_head(src);
    return loss(mb.targets, N, false, 0.0f);
  }
  // The head's parameters stay acquired from its forward through its backward, which runs now:
  // the (N, V) logits are scratch, too large to keep per micro-batch.
  const HeadParams h = acquire_head(src, layout_.block_segment(ch.last_layer - 1));
  head_forward(h, 0, N);
  const double total = loss(mb.targets, N, true, mb.grad_scale);
  s.tied_emb_grad = backward_head(h, sink, N);
  release_head(src);
  if (!ch.embedding) {
    // A pipeline's last chunk: other micro-batches run before this one's backward.
    if (s.head_grad.size() == 0) s.head_grad.allocate(boundary, MemCategory::activations);
    copy_rows(s.head_grad.data(), d_resid_.data(), boundary);
    if (s.tied_emb_grad) sink.release(layout_.embedding_segment()), s.tied_emb_grad = nullptr;
  }
  return total;
}

void Llama::chunk_backward(ParamSource& src, GradSink& sink, int chunk, int slot,
                           const float* grad_output, float* grad_input, const MicroBatch& mb,
                           BackwardPart part) {
  const ModelChunk& ch = chunks_[size_t(chunk)];
  Slot& s = select(chunk, slot);
  const int N = mb.B * mb.T;
  const size_t boundary = boundary_floats(mb.B, mb.T);
  const int layers = ch.last_layer - ch.first_layer;
  const ParamSegment before = ch.embedding ? layout_.embedding_segment() : ParamSegment{};
  // The embedding's gradient input, kept after the blocks' deferred parts.
  float* emb_input = s.deferred.size() ? s.deferred.data() + size_t(layers) * deferred_floats_per_block(N) : nullptr;
  if (part == BackwardPart::weight) {
    blocks_backward(src, sink, ch.first_layer, ch.last_layer, mb.B, mb.T, before, part);
    if (ch.embedding) {
      copy_rows(d_resid_.data(), emb_input, boundary);
      embedding_backward_into(sink.acquire(layout_.embedding_segment()).f32(), mb.tokens, N);
      sink.release(layout_.embedding_segment());
    }
    return;
  }
  // The whole model's forward left the head's gradient in d_resid_ itself.
  if (ch.head && !ch.embedding) copy_rows(d_resid_.data(), s.head_grad.data(), boundary);
  else if (!ch.head) copy_rows(d_resid_.data(), grad_output, boundary);
  if (part == BackwardPart::input && s.deferred.size() == 0) {
    s.deferred.allocate(size_t(layers) * deferred_floats_per_block(N) + (ch.embedding ? boundary : 0),
                        MemCategory::activations);
    emb_input = s.deferred.data() + size_t(layers) * deferred_floats_per_block(N);
  }
  blocks_backward(src, sink, ch.first_layer, ch.last_layer, mb.B, mb.T, before, part);
  if (!ch.embedding) {
    copy_rows(grad_input, d_resid_.data(), boundary);
  } else if (part == BackwardPart::input) {
    // Releasing the embedding before the blocks' weight pass would tell a data-parallel sink
    // that every gradient is final; it waits for the weight pass.
    copy_rows(emb_input, d_resid_.data(), boundary);
  } else {
    float* g = s.tied_emb_grad ? s.tied_emb_grad : sink.acquire(layout_.embedding_segment()).f32();
    s.tied_emb_grad = nullptr;
    embedding_backward_into(g, mb.tokens, N);
    sink.release(layout_.embedding_segment());
  }
}

}  // namespace ff
