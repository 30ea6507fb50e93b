// Parameter groups in one process: a group's coordinates, routing of segments to their group,
// initialisation through group coordinates, and the errors a bad group description gets.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

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
}

}  // namespace
}  // namespace ff
