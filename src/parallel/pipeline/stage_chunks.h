#pragma once
// The pipeline's bookkeeping around the model: the chunks of the model one pipeline rank runs,
// each micro-batch's activation stash from its forward to its backward, the zero-bubble split's
// deferred weight-gradient inputs, and the tied embedding's gradient held across the head's
// backward. The model (model/llama.h) only offers runs of blocks over storage it is given; this
// wrapper owns that storage, and the executor drives it through LlamaStages
// (pipeline_stages.h).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "model/llama.h"

namespace ff {

// A contiguous run of the model that one pipeline stage executes: decoder blocks
// [first_layer, last_layer), after the embedding if `embedding`, before the final norm, LM head
// and loss if `head`.
struct ModelChunk {
  int first_layer = 0, last_layer = 0;
  bool embedding = false, head = false;
};

// One micro-batch's tokens for a chunk (the first needs tokens, the last targets; every chunk
// reads the tokens under a document mask, whose boundaries they carry).
struct MicroBatch {
  const int32_t* tokens = nullptr;   // (B, T)
  const int32_t* targets = nullptr;  // (B, T)
  int B = 0, T = 0;
  float grad_scale = 0;  // d(loss)/d(token loss): 1 / tokens in the global batch
};

// The parts of the model a rank's chunks hold (what its Llama is built with).
ModelParts parts_of_chunks(const std::vector<ModelChunk>& chunks);

class StageChunks {
 public:
  // model: built with parts_of_chunks(chunks) (outlives this); chunks: this rank's, in model order.
  StageChunks(Llama& model, std::vector<ModelChunk> chunks);
  ~StageChunks();
  Llama& model() { return model_; }
  const std::vector<ModelChunk>& chunks() const { return chunks_; }
  // Rows exchanged at a chunk boundary: (R, C), R = resid rows of a (B, T) micro-batch.
  size_t boundary_floats(int B, int T) const { return model_.boundary_floats(B, T); }

  // Forward of chunk `chunk` for one micro-batch, keeping its activations in stash `slot`
  // (slots are the caller's: one per micro-batch in flight on this chunk). input: the previous
  // chunk's output, null on the embedding chunk. output: null on the head chunk, which instead
  // computes the loss and at once the head's backward, accumulating the head's gradients into
  // `grads` and keeping the gradient for the blocks in the stash; returns the loss sum (0 on
  // other chunks). with_grad false: an evaluation forward, no gradients (grads may be any sink;
  // nothing is acquired).
  double forward(ParamSource& params, GradSink& grads, int chunk, int slot, const float* input, float* output,
                 const MicroBatch& mb, bool with_grad);
  // Backward of the same chunk, micro-batch and slot. grad_output: null on the head chunk.
  // grad_input: the gradient for the previous chunk, null on the embedding chunk (which adds the
  // embedding's gradient instead).
  void backward(ParamSource& params, GradSink& grads, int chunk, int slot, const float* grad_output,
                float* grad_input, const MicroBatch& mb, BackwardPart part = BackwardPart::all);

 private:
  // One micro-batch's stash on one chunk, kept from its forward to its backward.
  struct Stash {
    std::unique_ptr<Activations> acts;
    TrackedBuffer<float> head_grad;  // head chunk: gradient of the last block's output (R, C)
    TrackedBuffer<float> deferred;   // BackwardPart::input: DeferredGrads per block, then the
                                     // embedding chunk's input gradient (R, C)
    float* tied_emb_grad = nullptr;  // tied head and embedding in one chunk: acquired across
  };
  // Allocated on first use: a rank's activation memory is the peak number of micro-batches in
  // flight on each chunk, which is what a pipeline schedule decides.
  Stash& stash(int chunk, int slot);

  Llama& model_;
  std::vector<ModelChunk> chunks_;
  std::vector<std::vector<std::unique_ptr<Stash>>> stashes_;  // [chunk][slot]
};

}  // namespace ff
