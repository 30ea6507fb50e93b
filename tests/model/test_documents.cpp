// Document masks in packed rows: the boundary rule read off the tokens; a packed row with the mask
// equals each of its documents run as a sequence of its own (positions from 0); a token changed in
// one document leaves another document's loss in the same row alone.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/documents.h"
#include "model_fixture.h"

using namespace ff;

namespace {

constexpr int32_t kBos = 1, kEos = 2;

TEST(Documents, BoundariesComeFromBosAndEos) {
  // BOS starts a document where it stands, EOS the token after it; EOS then BOS is one boundary.
  const std::vector<int32_t> tokens = {1, 5, 6, 2, 1, 7, 2, 8, 9, 1, 1, 2};
  std::vector<int32_t> doc(tokens.size()), pos(tokens.size());
  mark_documents(tokens.data(), int(tokens.size()), {kBos, kEos}, doc.data(), pos.data());
  EXPECT_EQ(doc, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 4}));
  EXPECT_EQ(pos, (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 0, 1, 0, 0, 1}));
  // A tokenizer with only an EOS (GPT-2's): documents start after it.
  mark_documents(tokens.data(), int(tokens.size()), {-1, kEos}, doc.data(), pos.data());
  EXPECT_EQ(doc, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2}));
  // Only a BOS: documents start at it; the first token never ends a document before it.
  mark_documents(tokens.data(), int(tokens.size()), {kBos, -1}, doc.data(), pos.data());
  EXPECT_EQ(doc, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 3, 3}));
  EXPECT_FALSE(document_starts_at(tokens.data(), 11, {kBos, -1}));
  EXPECT_TRUE(document_starts_at(tokens.data(), 0, {kBos, kEos}));
}

// A row of documents BOS + body + EOS with the given lengths (each >= 2), bodies drawn above EOS.
std::vector<int32_t> pack(const std::vector<int>& lengths, int vocab, uint64_t seed) {
  std::vector<int32_t> row;
  for (size_t d = 0; d < lengths.size(); ++d) {
    auto body = testkit::random_tokens(lengths[d] - 2, vocab - 3, seed + d);
    row.push_back(kBos);
    for (int32_t t : body) row.push_back(t + 3);
    row.push_back(kEos);
  }
  return row;
}

ModelConfig packed_config() {
  ModelConfig c = testkit::small_gqa_config();
  c.seq_len = 160;  // three 64-row attention tiles: boundaries inside tiles and on their edges
  return c;
}

// Documents starting inside tiles, at the tile edges 64 and 128, and a short one.
const std::vector<std::vector<int>> kRows = {{40, 24, 50, 46}, {64, 3, 61, 20, 12}};

double norm_of(const std::vector<float>& g) {
  double s = 0;
  for (float x : g) s += double(x) * x;
  return std::sqrt(s);
}

void expect_packed_row_equals_each_document_on_its_own(const ModelConfig& c) {
  const int T = c.seq_len, B = int(kRows.size());
  Llama packed(c, B, Recompute::none), single(c, 1, Recompute::none);
  packed.set_document_breaks({kBos, kEos});
  const size_t n = packed.layout().total();
  std::vector<float> params(n), g_packed(n, 0.0f), g_single(n, 0.0f);
  init_parameters(params.data(), packed.layout(), c, 5);
  testkit::perturb_norms(params.data(), packed.layout(), 6);
  std::vector<int32_t> tokens;
  for (size_t b = 0; b < kRows.size(); ++b) {
    const auto row = pack(kRows[b], c.vocab_size, 10 * b + 1);
    ASSERT_EQ(int(row.size()), T);
    // The test means something only if the window holds several documents.
    std::vector<int32_t> doc(static_cast<size_t>(T)), pos(static_cast<size_t>(T));
    mark_documents(row.data(), T, {kBos, kEos}, doc.data(), pos.data());
    ASSERT_GE(doc.back() + 1, 3);
    ASSERT_EQ(size_t(doc.back() + 1), kRows[b].size());
    tokens.insert(tokens.end(), row.begin(), row.end());
  }
  const auto targets = testkit::random_tokens(B * T, c.vocab_size, 77);
  const float scale = 1.0f / float(B * T);
  const double loss_packed =
      packed.forward_backward(params.data(), g_packed.data(), tokens.data(), targets.data(), B, T, scale);
  EXPECT_GT(packed.document_tiles().skipped, 0u);

  double loss_single = 0;
  size_t at = 0;
  for (const auto& lengths : kRows)
    for (int len : lengths) {
      loss_single += single.forward_backward(params.data(), g_single.data(), tokens.data() + at,
                                             targets.data() + at, 1, len, scale);
      at += size_t(len);
    }
  EXPECT_NEAR(loss_packed / loss_single, 1.0, 1e-5);
  EXPECT_NEAR(norm_of(g_packed) / norm_of(g_single), 1.0, 1e-5);
  for (const auto& v : packed.layout().views())
    EXPECT_LT(testkit::max_rel_diff(g_packed.data() + v.offset, g_single.data() + v.offset, v.numel), 1e-4)
        << v.name;

  // Without the mask the packed row is one sequence: the numbers differ (the test can fail).
  Llama causal(c, B, Recompute::none);
  std::vector<float> g_causal(n, 0.0f);
  const double loss_causal =
      causal.forward_backward(params.data(), g_causal.data(), tokens.data(), targets.data(), B, T, scale);
  EXPECT_GT(std::abs(loss_causal / loss_single - 1.0), 1e-4);
}

TEST(Documents, PackedRowEqualsEachDocumentOnItsOwn) { expect_packed_row_equals_each_document_on_its_own(packed_config()); }

// The per-document RoPE tables carry the model's scaling (llama3 here), as its own tables do; with
// q/k/v bias and head_dim 24.
TEST(Documents, OpenModelShapePackedRowEqualsEachDocumentOnItsOwn) {
  ModelConfig c = testkit::small_open_model_config();
  c.seq_len = packed_config().seq_len;
  expect_packed_row_equals_each_document_on_its_own(c);
}

// Loss of rows [first, last) of a logits matrix (V columns), in double.
double rows_loss(const float* logits, const std::vector<int32_t>& targets, int V, int first, int last) {
  double sum = 0;
  for (int r = first; r < last; ++r) {
    const float* z = logits + size_t(r) * V;
    double mx = -INFINITY, s = 0;
    for (int v = 0; v < V; ++v) mx = std::max(mx, double(z[v]));
    for (int v = 0; v < V; ++v) s += std::exp(double(z[v]) - mx);
    sum += mx + std::log(s) - double(z[targets[size_t(r)]]);
  }
  return sum;
}

TEST(Documents, ATokenOfOneDocumentLeavesAnotherAlone) {
  const ModelConfig c = packed_config();
  const int T = c.seq_len, V = c.vocab_size;
  const std::vector<int> lengths = {70, 50, 40};  // A = [0, 70), B = [70, 120)
  auto tokens = pack(lengths, V, 3);
  const auto targets = testkit::random_tokens(T, V, 4);
  const auto loss_of_b = [&](Llama& m, const std::vector<float>& p, const std::vector<int32_t>& t) {
    const float* logits = m.forward_logits(p.data(), t.data(), 1, T);
    return std::make_pair(rows_loss(logits, targets, V, 70, 120), rows_loss(logits, targets, V, 0, 70));
  };
  Llama masked(c, 1, Recompute::none), causal(c, 1, Recompute::none);
  masked.set_document_breaks({kBos, kEos});
  std::vector<float> params(masked.layout().total());
  init_parameters(params.data(), masked.layout(), c, 8);
  auto changed = tokens;
  changed[30] = changed[30] == 5 ? 6 : 5;  // inside document A
  const auto [b0, a0] = loss_of_b(masked, params, tokens);
  const auto [b1, a1] = loss_of_b(masked, params, changed);
  EXPECT_EQ(b0, b1);                     // document B does not see A at all
  EXPECT_GT(std::abs(a1 - a0), 1e-6);    // while A's own loss moved
  const auto [c0, ca0] = loss_of_b(causal, params, tokens);
  const auto [c1, ca1] = loss_of_b(causal, params, changed);
  EXPECT_GT(std::abs(c1 - c0), 1e-6);  // unmasked, B attends to A
  (void)ca0, (void)ca1;
}

}  // namespace
