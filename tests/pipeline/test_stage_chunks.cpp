// The model cut into pipeline chunks (StageChunks: the stage wrapper holding the stashes), driven
// by hand in one process: two micro-batches through
// two chunks in the order a pipeline would (both forwards, then both backwards, newest first),
// whole and with the zero-bubble input/weight split, give the losses and gradients of the whole
// model's forward_backward on each micro-batch.
#include <gtest/gtest.h>

#include <vector>

#include "../model/model_fixture.h"
#include "parallel/pipeline/stage_chunks.h"

using namespace ff;
using namespace ff::testkit;

namespace {

void check_chunks(Recompute policy, BackwardPart split) {
  const ModelConfig c = small_gqa_config();
  const int B = 2, T = c.seq_len, N = B * T;
  Llama whole(c, B, policy);
  std::vector<float> params(whole.layout().total()), expect(params.size(), 0.0f), got(params.size(), 0.0f);
  init_parameters(params.data(), whole.layout(), c, 5);
  perturb_norms(params.data(), whole.layout(), 6);
  const std::vector<int32_t> tokens = random_tokens(2 * N, c.vocab_size, 1), targets = random_tokens(2 * N, c.vocab_size, 2);
  double expect_loss[2];
  for (int m = 0; m < 2; ++m)
    expect_loss[m] = whole.forward_backward(params.data(), expect.data(), tokens.data() + m * N,
                                            targets.data() + m * N, B, T, 0.01f);

  // Chunk 0: embedding + block 0; chunk 1: block 1 + head. One model holds both, so its layout
  // is the whole model's and the gradients compare directly.
  const std::vector<ModelChunk> cut = {{0, 1, true, false}, {1, 2, false, true}};
  const ModelParts parts = parts_of_chunks(cut);
  Llama model(c, B, policy, nullptr, nullptr, &parts);
  StageChunks piped(model, cut);
  ASSERT_EQ(model.layout().total(), whole.layout().total());
  FlatParams src(params.data());
  FlatGrads sink(got.data());
  const size_t n = piped.boundary_floats(B, T);
  std::vector<float> act(2 * n), grad(2 * n);
  double loss[2];
  for (int m = 0; m < 2; ++m) {
    const MicroBatch mb{tokens.data() + m * N, targets.data() + m * N, B, T, 0.01f};
    piped.forward(src, sink, 0, m, nullptr, act.data() + m * n, mb, true);
    loss[m] = piped.forward(src, sink, 1, m, act.data() + m * n, nullptr, mb, true);
  }
  const BackwardPart first = split == BackwardPart::all ? BackwardPart::all : BackwardPart::input;
  for (int m = 1; m >= 0; --m) {
    const MicroBatch mb{tokens.data() + m * N, targets.data() + m * N, B, T, 0.01f};
    piped.backward(src, sink, 1, m, nullptr, grad.data() + m * n, mb, first);
    piped.backward(src, sink, 0, m, grad.data() + m * n, nullptr, mb, first);
  }
  if (first == BackwardPart::input)
    for (int m = 0; m < 2; ++m) {  // weight passes last, in another order than the inputs'
      const MicroBatch mb{tokens.data() + m * N, targets.data() + m * N, B, T, 0.01f};
      piped.backward(src, sink, 0, m, nullptr, nullptr, mb, BackwardPart::weight);
      piped.backward(src, sink, 1, m, nullptr, nullptr, mb, BackwardPart::weight);
    }
  for (int m = 0; m < 2; ++m) EXPECT_NEAR(loss[m], expect_loss[m], 1e-6 * expect_loss[m]);
  for (const ParamView& v : whole.layout().views())
    EXPECT_LT(max_rel_diff(got.data() + v.offset, expect.data() + v.offset, v.numel), 1e-5) << v.name;
}

}  // namespace

TEST(Chunks, TwoChunksTwoMicroBatchesEqualTheWholeModel) { check_chunks(Recompute::none, BackwardPart::all); }
TEST(Chunks, SplitBackwardEqualsTheWholeBackward) { check_chunks(Recompute::none, BackwardPart::input); }
TEST(Chunks, SplitBackwardUnderSelectiveRecompute) { check_chunks(Recompute::selective, BackwardPart::input); }
TEST(Chunks, SplitBackwardUnderFullRecompute) { check_chunks(Recompute::full, BackwardPart::input); }

// A stage wrapper over a model that lacks one of its chunks' parts is refused, naming the part.
TEST(Chunks, ChunkOutsideTheModelsPartsIsRefused) {
  const ModelConfig c = small_gqa_config();
  ModelParts first_half;
  first_half.layers = {0};
  first_half.head = false;
  Llama model(c, 1, Recompute::none, nullptr, nullptr, &first_half);
  try {
    StageChunks stage(model, {{0, 2, true, false}});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("runs layer 1, which the model does not hold"), std::string::npos) << e.what();
  }
}
