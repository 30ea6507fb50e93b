// Each tensor-parallel layer against the matching slice of the serial layer, under mpirun -np 2
// and 4, with and without sequence parallelism. The layers run inside the real model (a
// one-block LLaMA with grouped-query attention), so what is checked is the code that trains:
//   vocab-parallel head: this rank's logit columns equal the serial logits' columns;
//   vocab-parallel loss: the loss equals the serial loss;
//   column (q, k, v, gate, up), row (o, down), vocab (embedding, head) and replicated (norms)
//   parameters: each weight gradient equals the serial gradient's block, which also checks every
//   input gradient on the way back (each layer's weight gradient is computed from it);
//   a decoder block: its output and its input gradient equal the serial rows (all of them, or
//   this rank's sequence shard with sp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "../comm/mpi_test_util.h"
#include "model/llama.h"
#include "parallel/model_state.h"
#include "parallel/pipeline/stage_chunks.h"
#include "parallel/tensor/tensor_hooks.h"
#include "parallel/tensor/tensor_plan.h"
#include "parallel/tensor/tensor_replicas.h"
#include "local_tensors.h"
#include "fill_state.h"

using namespace ff;
using ff::testing::extract_local_tensors;
using ff::test::world;

namespace {

ModelConfig one_block() {
  ModelConfig c;
  c.vocab_size = 64, c.dim = 32, c.n_layers = 1, c.n_heads = 4, c.n_kv_heads = 2;
  c.ffn_dim = 48, c.seq_len = 16;
  return c;
}

// The model state a tensor-parallel rank trains with (no data parallelism) holding `params`: the
// model's only gradient sink is its grads(), which sums the replicas' partial gradients.
std::unique_ptr<ModelState> tp_state(const ParamLayout& l, const TensorReplicas& replicas,
                                     const std::vector<float>& params) {
  const AdamWConfig adam{0.9f, 0.95f, 1e-8f, 0.0f};  // unused: no step is taken
  auto state = make_model_state(l, adam, DataParallelConfig{}, nullptr, nullptr, replicas.ranges());
  const std::vector<float> zeros(params.size(), 0.0f);
  testkit::fill_state(*state, params.data(), zeros.data(), zeros.data());
  state->zero_grads();
  return state;
}

// The state's summed gradient, in the flat layout.
std::vector<float> summed_grads(ModelState& state, const ParamLayout& l) {
  state.finish_grads();
  std::vector<float> g(l.total(), 0.0f);
  for (const ParamSegment& seg : l.segments()) {
    if (seg.count == 0) continue;
    size_t n = 0;
    const float* x = state.segment_grads(seg, &n);
    std::copy(x, x + n, g.data() + seg.offset);
  }
  return g;
}

double rel_diff(const float* a, const float* b, size_t n) {
  double d = 0, s = 0;
  for (size_t i = 0; i < n; ++i) d += double(a[i] - b[i]) * (a[i] - b[i]), s += double(b[i]) * b[i];
  return std::sqrt(d / std::max(s, 1e-30));
}

void check_layers(bool sp, bool tied, Recompute policy) {
  const Comm& tp = world();
  const int t = tp.size(), B = 2;
  ModelConfig c = one_block();
  c.tied_embeddings = tied;
  const int T = c.seq_len, N = B * T;
  std::vector<int32_t> tokens(N), targets(N);
  for (int i = 0; i < N; ++i) tokens[i] = (i * 7 + 3) % c.vocab_size, targets[i] = (i * 5 + 1) % c.vocab_size;

  Llama serial(c, B, policy);
  std::vector<float> params(serial.layout().total()), grads(params.size(), 0.0f);
  init_parameters(params.data(), serial.layout(), c, 7);
  std::vector<float> logits(serial.forward_logits(params.data(), tokens.data(), B, T),
                            serial.forward_logits(params.data(), tokens.data(), B, T) + size_t(N) * c.vocab_size);
  const double loss = serial.forward_backward(params.data(), grads.data(), tokens.data(), targets.data(), B, T, 0.01f);

  const PlanSlicer slicer(c, t, tp.rank());
  TensorParallelHooks group(tp, sp);
  Llama mine(c, B, policy, &slicer, &group);
  const ParamLayout& l = mine.layout();
  std::vector<float> p(l.total()), expect_g(l.total());
  extract_local_tensors(l, serial.layout(), params.data(), p.data());
  extract_local_tensors(l, serial.layout(), grads.data(), expect_g.data());

  // Output of the vocab-parallel head: this rank's columns of the logits.
  const ParamView& head = l.find(tied ? "model.embed_tokens.weight" : "lm_head.weight");
  const int Vl = int(head.shape[0]), v0 = int(head.row0);
  const float* lg = mine.forward_logits(p.data(), tokens.data(), B, T);
  double worst_logit = 0;
  for (int n = 0; n < N; ++n)
    for (int v = 0; v < Vl; ++v)
      worst_logit = std::max(worst_logit, double(std::fabs(lg[size_t(n) * Vl + v] - logits[size_t(n) * c.vocab_size + v0 + v])));
  EXPECT_LT(worst_logit, 1e-5) << "logits";

  const TensorReplicas replicas(l, tp, sp);
  auto state = tp_state(l, replicas, p);
  const double tp_loss =
      mine.forward_backward(state->params(), state->grads(true), tokens.data(), targets.data(), B, T, 0.01f);
  EXPECT_NEAR(tp_loss, loss, 1e-5 * loss);
  const std::vector<float> g = summed_grads(*state, l);

  std::map<TensorStyle, double> worst;
  for (const ParamView& v : l.views()) {
    const double d = rel_diff(g.data() + v.offset, expect_g.data() + v.offset, v.numel);
    EXPECT_LT(d, 1e-5) << v.name << " (" << tensor_style_name(style_of(v.name)) << ")";
    worst[style_of(v.name)] = std::max(worst[style_of(v.name)], d);
  }
  if (tp.rank() == 0)
    for (auto [style, d] : worst)
      std::printf("t=%d sp=%d tied=%d %s: worst gradient rel diff %.1e\n", t, sp, tied, tensor_style_name(style), d);
}

// A decoder block's output and input gradient, read at a pipeline-chunk boundary: the model cut
// after block 0 (embedding + block 0 | block 1 + head). Chunk 0's output is block 0's output; chunk
// 1's input gradient is block 1's input gradient. Each rank holds all N rows, or with sp its own
// N/t rows, of the serial tensors.
void check_block_boundaries(bool sp) {
  const Comm& tp = world();
  const int t = tp.size(), B = 2;
  ModelConfig c = one_block();
  c.n_layers = 2;
  const int T = c.seq_len, N = B * T, C = c.dim;
  std::vector<int32_t> tokens(N), targets(N);
  for (int i = 0; i < N; ++i) tokens[i] = (i * 11 + 2) % c.vocab_size, targets[i] = (i * 3 + 5) % c.vocab_size;
  const std::vector<ModelChunk> cut = {{0, 1, true, false}, {1, 2, false, true}};
  const MicroBatch mb{tokens.data(), targets.data(), B, T, 0.01f};

  const ModelParts parts = parts_of_chunks(cut);
  Llama serial_model(c, B, Recompute::none, nullptr, nullptr, &parts);
  StageChunks serial(serial_model, cut);
  const ParamLayout& serial_layout = serial_model.layout();
  std::vector<float> params(serial_layout.total()), grads(params.size(), 0.0f);
  init_parameters(params.data(), serial_layout, c, 9);
  FlatParams src(params.data());
  FlatGrads sink(grads.data());
  std::vector<float> out(size_t(N) * C), grad_in(size_t(N) * C);
  serial.forward(src, sink, 0, 0, nullptr, out.data(), mb, true);
  serial.forward(src, sink, 1, 0, out.data(), nullptr, mb, true);
  serial.backward(src, sink, 1, 0, nullptr, grad_in.data(), mb);

  const PlanSlicer slicer(c, t, tp.rank());
  TensorParallelHooks group(tp, sp);
  Llama my_model(c, B, Recompute::none, &slicer, &group, &parts);
  StageChunks mine(my_model, cut);
  const ParamLayout& my_layout = my_model.layout();
  std::vector<float> p(my_layout.total());
  extract_local_tensors(my_layout, serial_layout, params.data(), p.data());
  const TensorReplicas replicas(my_layout, tp, sp);
  auto state = tp_state(my_layout, replicas, p);
  const size_t R = sp ? size_t(N / t) : size_t(N), first = sp ? size_t(tp.rank()) * R : 0;
  ASSERT_EQ(mine.boundary_floats(B, T), R * C);
  std::vector<float> my_out(R * C), my_grad_in(R * C);
  mine.forward(state->params(), state->grads(true), 0, 0, nullptr, my_out.data(), mb, true);
  mine.forward(state->params(), state->grads(true), 1, 0, my_out.data(), nullptr, mb, true);
  mine.backward(state->params(), state->grads(true), 1, 0, nullptr, my_grad_in.data(), mb);
  const double d_out = rel_diff(my_out.data(), out.data() + first * C, R * C);
  const double d_in = rel_diff(my_grad_in.data(), grad_in.data() + first * C, R * C);
  EXPECT_LT(d_out, 1e-5) << "block output";
  EXPECT_LT(d_in, 1e-5) << "block input gradient";
  if (tp.rank() == 0)
    std::printf("t=%d sp=%d: block output rel diff %.1e, block input gradient rel diff %.1e\n", t, sp, d_out, d_in);
}

}  // namespace

TEST(TensorParallelLayers, BlockOutputAndInputGradientMatchTheSerialRows) { check_block_boundaries(false); }
TEST(TensorParallelLayers, BlockOutputAndInputGradientMatchTheSerialRowsWithSequenceParallelism) {
  check_block_boundaries(true);
}
TEST(TensorParallelLayers, MatchTheSerialSlices) { check_layers(false, false, Recompute::none); }
TEST(TensorParallelLayers, MatchTheSerialSlicesWithSequenceParallelism) { check_layers(true, false, Recompute::none); }
TEST(TensorParallelLayers, MatchTheSerialSlicesTied) { check_layers(false, true, Recompute::none); }
TEST(TensorParallelLayers, MatchTheSerialSlicesSequenceParallelTiedSelective) { check_layers(true, true, Recompute::selective); }
TEST(TensorParallelLayers, MatchTheSerialSlicesSequenceParallelFullRecompute) { check_layers(true, false, Recompute::full); }
