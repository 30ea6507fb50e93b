// The tensor-parallel plan without MPI: which block of each tensor a rank holds, that the blocks
// tile every tensor exactly once (up to declared replicas), that each rank's sharded init equals
// its block of the serial init (principle 8, docs/principles.md), and that bad shapes are refused
// with numbers.
#include <gtest/gtest.h>

#include <vector>

#include "model/parameters.h"
#include "parallel/param_group.h"
#include "parallel/tensor/tensor_plan.h"
#include "parallel/tensor/tensor_replicas.h"
#include "local_tensors.h"

using namespace ff;
using ff::testing::extract_local_tensors;

namespace {
ModelConfig gqa() {  // 4 query heads over 2 kv heads, like configs/tiny.toml
  ModelConfig c;
  c.vocab_size = 64, c.dim = 32, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
  c.ffn_dim = 48, c.seq_len = 16;
  return c;
}
std::string error_of(const ModelConfig& c, int t, bool sp) {
  try {
    validate_tensor_parallel(c, t, sp);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(TensorPlan, EveryParameterHasAStyle) {
  const ModelConfig c = gqa();
  const ParamLayout layout(c);
  for (const ParamView& v : layout.views()) EXPECT_NO_THROW(style_of(v.name)) << v.name;
  EXPECT_EQ(style_of("model.layers.3.self_attn.o_proj.weight"), TensorStyle::row);
  EXPECT_EQ(style_of("model.layers.0.mlp.up_proj.weight"), TensorStyle::column);
  EXPECT_EQ(style_of("lm_head.weight"), TensorStyle::vocab);
  EXPECT_EQ(style_of("model.norm.weight"), TensorStyle::replicated);
}

TEST(TensorPlan, SlicesFollowMegatronsSplit) {
  const ModelConfig c = gqa();
  const int D = c.head_dim();
  const PlanSlicer s(c, 2, 1);
  const ParamLayout l(c, &s);
  const ParamView& q = l.find("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(q.shape, (std::vector<int64_t>{2 * D, 32}));
  EXPECT_EQ(q.row0, 2 * D);
  const ParamView& o = l.find("model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(o.shape, (std::vector<int64_t>{32, 2 * D}));
  EXPECT_EQ(o.col0, 2 * D);
  const ParamView& emb = l.find("model.embed_tokens.weight");
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(emb.row0, 32);
  EXPECT_EQ(l.find("model.norm.weight").replicas, 2);
}

TEST(TensorPlan, FewerKvHeadsThanRanksReplicatesEachOnTheRanksThatReadIt) {
  const ModelConfig c = gqa();  // query head h reads kv head h / 2
  const int D = c.head_dim();
  for (int r = 0; r < 4; ++r) {
    const PlanSlicer s(c, 4, r);
    const ParamLayout l(c, &s);
    const ParamView& k = l.find("model.layers.1.self_attn.k_proj.weight");
    EXPECT_EQ(k.shape[0], D);
    EXPECT_EQ(k.row0, (r / 2) * D) << "rank " << r << " holds query head " << r;
    EXPECT_EQ(k.replicas, 2);
    EXPECT_EQ(l.find("model.layers.1.self_attn.q_proj.weight").row0, r * D);
  }
}

// Qwen2's q/k/v bias is cut as its weight's rows: the same heads on each rank, a shared kv head's
// bias on the ranks that share it (summed over them, as the weight's gradient).
TEST(TensorPlan, QkvBiasFollowsItsWeightsRows) {
  ModelConfig c = gqa();
  c.qkv_bias = true, c.head_size = 12;  // and a head_dim other than dim / n_heads
  for (int t : {2, 4})
    for (int r = 0; r < t; ++r) {
      const PlanSlicer s(c, t, r);
      const ParamLayout l(c, &s);
      for (const char* p : {"q_proj", "k_proj", "v_proj"}) {
        const std::string at = std::string("model.layers.1.self_attn.") + p;
        const ParamView &w = l.find(at + ".weight"), &b = l.find(at + ".bias");
        EXPECT_EQ(b.shape, (std::vector<int64_t>{w.shape[0]})) << at << " t=" << t;
        EXPECT_EQ(b.row0, w.row0) << at << " t=" << t << " rank " << r;
        EXPECT_EQ(b.replicas, w.replicas) << at << " t=" << t;
        EXPECT_EQ(replica_grads_are_partial(b, false), replica_grads_are_partial(w, false)) << at;
      }
      // The three are adjacent, right after v's weight: one bias of the fused q/k/v width.
      const ParamView &v = l.find("model.layers.1.self_attn.v_proj.weight"),
                      &qb = l.find("model.layers.1.self_attn.q_proj.bias");
      EXPECT_EQ(qb.offset, v.offset + v.numel);
      EXPECT_EQ(l.block_offsets(1).qkv_bias, qb.offset - l.block_segment(1).offset);
    }
}

TEST(TensorPlan, BlocksTileEachTensorOnceCountingReplicas) {
  ModelConfig c = gqa();
  for (bool open_model : {false, true}) {  // with q/k/v bias and head_dim 12 over dim 32
    c.qkv_bias = open_model, c.head_size = open_model ? 12 : 0;
    const ParamLayout full(c);
    for (int t : {2, 4}) {
      std::vector<double> cover(full.total(), 0.0);
      for (int r = 0; r < t; ++r) {
        const PlanSlicer s(c, t, r);
        const ParamLayout l(c, &s);
        for (size_t i = 0; i < l.views().size(); ++i) {
          const ParamView& v = l.views()[i];
          for (size_t e = 0; e < v.numel; ++e) cover[full.views()[i].offset + v.full_index(e)] += 1.0 / v.replicas;
        }
      }
      for (size_t i = 0; i < cover.size(); ++i)
        ASSERT_DOUBLE_EQ(cover[i], 1.0) << "t=" << t << " element " << i << " open model " << open_model;
    }
  }
}

TEST(TensorPlan, ShardedInitEqualsTheBlockOfTheSerialInit) {
  const ModelConfig c = gqa();
  const ParamLayout full(c);
  std::vector<float> serial(full.total());
  init_parameters(serial.data(), full, c, 42);
  for (int t : {2, 4})
    for (int r = 0; r < t; ++r) {
      const PlanSlicer s(c, t, r);
      const ParamLayout l(c, &s);
      std::vector<float> mine(l.total()), cut(l.total());
      init_parameters(mine.data(), l, c, 42);  // draws only this rank's elements
      extract_local_tensors(l, full, serial.data(), cut.data());
      ASSERT_EQ(mine, cut) << "t=" << t << " rank " << r;
    }
}

TEST(TensorPlan, NormWeightsCountEachElementOnce) {
  const ModelConfig c = gqa();
  const double total = double(ParamLayout(c).total());
  for (int t : {2, 4}) {
    double counted = 0;
    for (int r = 0; r < t; ++r) {
      const PlanSlicer s(c, t, r);
      const ParamLayout l(c, &s);
      // The weights the model state applies: its group's, from the tensor-parallel replicas.
      const std::vector<ParamGroupSpec> groups =
          model_param_groups(l, nullptr, tensor_replica_ranges(l, false, nullptr, nullptr));
      ASSERT_EQ(groups.size(), 1u);
      const GroupLayout group(groups[0], &l);
      double n = double(l.total());
      for (const WeightedRange& w : group.norm_weights()) n += (w.weight - 1) * double(w.count);
      counted += n;
    }
    EXPECT_DOUBLE_EQ(counted, total) << "t=" << t;
  }
}

TEST(TensorPlan, ShapesThatDoNotDivideAreRefusedWithTheNumbers) {
  ModelConfig c = gqa();
  EXPECT_NE(error_of(c, 3, false).find("n_heads (4) must be divisible by tp (3)"), std::string::npos);
  c.ffn_dim = 50;
  EXPECT_NE(error_of(c, 4, false).find("ffn_dim (50) must be divisible by tp (4)"), std::string::npos);
  c = gqa();
  c.vocab_size = 66;
  EXPECT_NE(error_of(c, 4, false).find("vocab_size (66) must be divisible by tp (4)"), std::string::npos);
  EXPECT_NE(error_of(c, 4, false).find("--vocab 68"), std::string::npos);
  c = gqa();
  c.seq_len = 18;
  EXPECT_EQ(error_of(c, 4, false).find("seq_len"), std::string::npos);  // only sp splits tokens
  EXPECT_NE(error_of(c, 4, true).find("seq_len (18) must be divisible by tp (4)"), std::string::npos);
  c = gqa();
  c.n_heads = 6, c.n_kv_heads = 2, c.dim = 48;  // 3 ranks, 2 kv heads: neither divides
  EXPECT_NE(error_of(c, 3, false).find("n_kv_heads (2)"), std::string::npos);
  EXPECT_EQ(error_of(gqa(), 4, true), "");
}
