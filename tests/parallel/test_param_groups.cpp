// Parameter groups in one process: a group's coordinates, routing of segments to their group,
// initialisation through group coordinates, and the errors a bad group description gets.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/data/ddp.h"
#include "parallel/grouped_state.h"
#include "parallel/param_group.h"

namespace ff {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.vocab_size = 40, c.dim = 16, c.n_layers = 3, c.n_heads = 2, c.n_kv_heads = 1, c.ffn_dim = 24, c.seq_len = 8;
  return c;
}

ParamGroupSpec group(const std::string& name, std::vector<ParamSegment> segs) {
  ParamGroupSpec g;
  g.name = name;
  for (const ParamSegment& s : segs) {
    g.segments.push_back(s);
    g.tensors.push_back({s.offset, s.count, true});
  }
  return g;
}

// Splits the model's layout into two groups by segment parity (blocks 0 and 2 with the head in
// one, the embedding and block 1 in the other), as an expert group would take some blocks.
std::vector<ParamGroupSpec> by_parity(const ParamLayout& layout) {
  std::vector<ParamGroupSpec> g(2);
  g[0].name = "even", g[1].name = "odd", g[1].kind = ParamGroupKind::expert;
  for (size_t i = 0; i < layout.segments().size(); ++i) {
    const ParamSegment& s = layout.segments()[i];
    g[i % 2].segments.push_back(s);
    for (const ParamView& v : layout.views())
      if (v.offset >= s.offset && v.offset < s.end()) g[i % 2].tensors.push_back({v.offset, v.numel, v.is_matrix});
  }
  return g;
}

const AdamWConfig kAdam{0.9f, 0.95f, 1e-8f, 0.1f};

std::string error_of(const std::vector<ParamGroupSpec>& groups) {
  try {
    GroupedState s(groups, nullptr, kAdam, DataParallelConfig{}, nullptr);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ParamGroups, SegmentsAreLaidOutBackToBackInTheGroup) {
  ParamGroupSpec g = group("B", {{10, 5}, {30, 7}});
  const GroupLayout l(g, nullptr);
  EXPECT_EQ(l.total(), 12u);
  ASSERT_EQ(l.segments().size(), 2u);
  EXPECT_EQ(l.segments()[1].offset, 5u);
  EXPECT_EQ(l.segments()[1].count, 7u);
  EXPECT_EQ(l.tensors()[1].offset, 5u);
  EXPECT_EQ(l.find(30), 1);
  EXPECT_EQ(l.find(31), -1);
  EXPECT_FALSE(l.identity());
  EXPECT_TRUE(GroupLayout(group("A", {{0, 5}, {5, 7}}), nullptr).identity());
}

TEST(ParamGroups, TheModelsLayoutIsOneDenseGroupInItsOwnCoordinates) {
  const ModelConfig c = small_config();
  const ParamLayout layout(c);
  const std::vector<ParamGroupSpec> g = model_param_groups(layout, nullptr);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].kind, ParamGroupKind::dense);
  EXPECT_EQ(g[0].comm, nullptr);
  EXPECT_TRUE(GroupLayout(g[0], &layout).identity());
}

TEST(ParamGroups, TwoGroupsInitialiseAndRouteLikeTheWholeModel) {
  const ModelConfig c = small_config();
  const ParamLayout layout(c);
  const size_t n = layout.total();
  GroupedState state(by_parity(layout), &layout, kAdam, DataParallelConfig{}, nullptr);
  ASSERT_EQ(state.group_count(), 2u);
  EXPECT_EQ(state.group_layout(0).total() + state.group_layout(1).total(), n);

  state.init_parameters(c, 7);
  std::vector<float> whole(n), p(n), m(n), v(n);
  init_parameters(whole.data(), layout, c, 7);
  state.gather_full(p.data(), m.data(), v.data());
  EXPECT_EQ(p, whole);  // bit for bit: the same counter-based draws through group coordinates

  // Every segment reads the model's values and writes gradients its group holds.
  state.zero_grads();
  ParamSource& src = state.params();
  GradSink& sink = state.grads(true);
  double sq = 0;
  for (const ParamSegment& s : layout.segments()) {
    const float* x = src.acquire(s, {}).f32();
    EXPECT_EQ(x[0], whole[s.offset]);
    EXPECT_EQ(x[s.count - 1], whole[s.end() - 1]);
    src.release(s);
    float* g = sink.acquire(s).f32();
    for (size_t e = 0; e < s.count; ++e) g[e] += float(s.offset + e) * 1e-4f;
    sink.release(s);
  }
  state.finish_grads();
  for (size_t i = 0; i < n; ++i) sq += double(float(i) * 1e-4f) * double(float(i) * 1e-4f);
  EXPECT_NEAR(state.grad_square_sum({}), sq, 1e-9 * sq);
  for (const ParamSegment& s : layout.segments()) {
    size_t count = 0;
    const float* g = state.segment_grads(s, &count);
    ASSERT_EQ(count, s.count);
    EXPECT_EQ(g[count - 1], float(s.end() - 1) * 1e-4f);
  }
}

TEST(ParamGroups, BadGroupsAreRefusedWithTheProblem) {
  EXPECT_NE(error_of({group("A", {{0, 10}, {5, 10}})}).find("overlaps"), std::string::npos);
  EXPECT_NE(error_of({group("A", {{0, 10}}), group("B", {{0, 10}})}).find("exactly one group"), std::string::npos);
  ParamGroupSpec half = group("A", {{0, 10}});
  half.tensors[0].count = 6;
  EXPECT_NE(error_of({half}).find("tile"), std::string::npos);
  ParamGroupSpec across = group("A", {{0, 10}, {20, 10}});
  across.tensors = {{0, 20, true}};
  EXPECT_NE(error_of({across}).find("inside one of the group's segments"), std::string::npos);
  ParamGroupSpec bf16 = group("A", {{0, 10}});
  bf16.param = DType::bf16;
  EXPECT_NE(error_of({bf16}).find("only f32"), std::string::npos);
  EXPECT_NE(error_of({}).find("at least one"), std::string::npos);
  ParamGroupSpec outside = group("A", {{0, 10}, {20, 10}});
  outside.replicas = {{8, 4, 2, nullptr}};  // runs past the first segment
  EXPECT_NE(error_of({outside}).find("replica range at offset 8 (4 elements) does not lie inside"),
            std::string::npos);
  ParamGroupSpec overlapping = group("A", {{0, 10}});
  overlapping.replicas = {{0, 4, 2, nullptr}, {3, 2, 2, nullptr}};
  EXPECT_NE(error_of({overlapping}).find("overlaps the one before"), std::string::npos);
  ParamGroupSpec none = group("A", {{0, 10}});
  none.replicas = {{0, 4, 0, nullptr}};
  EXPECT_NE(error_of({none}).find("0 replicas"), std::string::npos);
}

TEST(ParamGroups, ModelReplicaRangesGoToTheirGroupOrAreRefused) {
  const ModelConfig c = small_config();
  const ParamLayout layout(c);
  const ParamView& norm = layout.find("model.norm.weight");
  const std::vector<ParamGroupSpec> g =
      model_param_groups(layout, nullptr, {{norm.offset, norm.numel, 2, nullptr}});
  ASSERT_EQ(g.size(), 1u);
  ASSERT_EQ(g[0].replicas.size(), 1u);
  EXPECT_EQ(g[0].replicas[0].offset, norm.offset);
  try {
    model_param_groups(layout, nullptr, {{layout.total() + 5, 3, 2, nullptr}});
    ADD_FAILURE() << "a range past the layout was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("1 of 1 replica ranges lie outside"), std::string::npos) << e.what();
  }
}

// Replica ranges in group coordinates, and their norm weights 1/replicas (a range held by one rank
// weighs 1 and is left out).
TEST(ParamGroups, ReplicaRangesAndNormWeightsAreInGroupCoordinates) {
  ParamGroupSpec g = group("B", {{10, 5}, {30, 7}});
  g.replicas = {{11, 2, 2, nullptr}, {30, 3, 4, nullptr}, {35, 2, 1, nullptr}};
  const GroupLayout l(g, nullptr);
  ASSERT_EQ(l.replicas().size(), 3u);
  EXPECT_EQ(l.replicas()[0].offset, 1u);
  EXPECT_EQ(l.replicas()[1].offset, 5u);
  EXPECT_EQ(l.replicas()[2].offset, 10u);
  ASSERT_EQ(l.norm_weights().size(), 2u);
  EXPECT_EQ(l.norm_weights()[0].offset, 1u);
  EXPECT_EQ(l.norm_weights()[0].count, 2u);
  EXPECT_EQ(l.norm_weights()[0].weight, 0.5);
  EXPECT_EQ(l.norm_weights()[1].offset, 5u);
  EXPECT_EQ(l.norm_weights()[1].count, 3u);
  EXPECT_EQ(l.norm_weights()[1].weight, 0.25);
}

// In one process the gradient norm weights each group's replicas: with gradient 1 everywhere,
// (elements - replicated elements) + replicated elements / replicas.
TEST(ParamGroups, GradientNormWeightsEachGroupsReplicas) {
  ParamGroupSpec a = group("A", {{0, 10}, {20, 10}}), b = group("B", {{10, 10}});
  a.replicas = {{22, 4, 2, nullptr}};
  b.replicas = {{10, 3, 3, nullptr}};
  GroupedState s({a, b}, nullptr, kAdam, DataParallelConfig{}, nullptr);
  s.zero_grads();
  GradSink& sink = s.grads(true);
  for (const ParamSegment& seg : std::vector<ParamSegment>{{20, 10}, {10, 10}, {0, 10}}) {
    float* g = sink.acquire(seg).f32();
    for (size_t i = 0; i < seg.count; ++i) g[i] = 1.0f;
    sink.release(seg);
  }
  s.finish_grads();
  EXPECT_DOUBLE_EQ(s.grad_square_sum({}), (30.0 - 4 - 3) + 4.0 / 2 + 3.0 / 3);
  // An extra range (a tied embedding's copies) adds its own weight: 0.5 on [0, 6).
  EXPECT_DOUBLE_EQ(s.grad_square_sum({{0, 6, 0.5}}), (30.0 - 4 - 3) + 4.0 / 2 + 3.0 / 3 - 3.0);
}


// DDP's buckets in backward's order: consecutive segments while they fit the bucket, closed before
// the one that would overflow it; a segment larger than the bucket alone.
TEST(DdpBuckets, CloseBeforeTheSegmentThatWouldOverflow) {
  // Segments (offset, count) back to back: sizes 10, 40, 30, 30, 20 from offset 0; total 130.
  const std::vector<ParamSegment> segs = {{0, 10}, {10, 40}, {50, 30}, {80, 30}, {110, 20}};
  using B = BucketedAllReduce::Bucket;
  auto plan = [&](size_t cap) { return BucketedAllReduce::plan_buckets(segs, 130, cap); };
  auto same = [](const std::vector<B>& got, const std::vector<std::pair<size_t, size_t>>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i].lo != want[i].first || got[i].hi != want[i].second) return false;
    return true;
  };
  // From the top: 20 + 30 = 50 fits 50; + 30 would be 80: close. 30 alone (+ 40 = 70 > 50);
  // 40 + 10 = 50 fits. (Closing only once a bucket reached 50 would have glued 30 and 40.)
  EXPECT_TRUE(same(plan(50), {{80, 130}, {50, 80}, {0, 50}}));
  // One less: nothing pairs.
  EXPECT_TRUE(same(plan(49), {{110, 130}, {80, 110}, {50, 80}, {10, 50}, {0, 10}}));
  // A bucket smaller than every segment: one bucket per segment.
  EXPECT_TRUE(same(plan(5), {{110, 130}, {80, 110}, {50, 80}, {10, 50}, {0, 10}}));
  // A bucket holding everything: one.
  EXPECT_TRUE(same(plan(130), {{0, 130}}));
  // 20 + 30 + 30 = 80 fits 80; 40 + 10 = 50.
  EXPECT_TRUE(same(plan(80), {{50, 130}, {0, 50}}));
}

}  // namespace
}  // namespace ff
