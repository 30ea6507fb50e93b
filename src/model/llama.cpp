#include "model/llama.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/rope.h"

namespace ff {

namespace {
int rows_of(const ParamLayout& layout, const std::string& name) {
  return int(layout.find(name).shape[0]);
}
// The vocabulary rows this rank holds: the embedding's, or (a last stage without it) the head's.
VocabRange vocab_of(const ParamLayout& layout) {
  for (const ParamView& v : layout.views())
    if (v.name == "model.embed_tokens.weight" || v.name == "lm_head.weight")
      return {int(v.row0), int(v.shape[0])};
  return {};
}
}  // namespace

BlockWidths local_widths(const ParamLayout& layout, const ModelConfig& c, const ModelParts& parts) {
  if (parts.layers.empty()) throw std::runtime_error("a model part must hold at least one decoder block");
  const std::string p = "model.layers." + std::to_string(parts.layers.front()) + ".";
  const int D = c.head_dim(), H = rows_of(layout, p + "self_attn.q_proj.weight") / D,
            Hkv = rows_of(layout, p + "self_attn.k_proj.weight") / D;
  BlockWidths w = block_widths(c);
  w.Q = int64_t(H + 2 * Hkv) * D, w.A = int64_t(H) * D, w.H = H;
  for (int l : parts.layers)  // the FFN width of a dense block (an all-MoE model has none)
    if (layout.block_kind(l) == BlockKind::dense) {
      w.F = rows_of(layout, "model.layers." + std::to_string(l) + ".mlp.gate_proj.weight");
      break;
    }
  if (layout.local_experts() > 0) w.EP = c.moe.n_experts / layout.local_experts();
  return w;
}

Llama::Llama(const ModelConfig& config, int max_batch, Recompute policy, const TensorSlicer* slicer,
             ModelHooks* hooks, const ModelParts* parts, const GemmContext* gemm)
    : cfg_((config.validate(), config)),
      gemm_(gemm ? gemm : &own_gemm_),
      parts_(parts ? *parts : ModelParts::all(config)),
      layout_(config, slicer, &parts_),
      hooks_(hooks ? hooks : &serial_hooks_),
      w_(local_widths(layout_, config, parts_)),
      heads_(int(w_.H)),
      kv_heads_(int((w_.Q - w_.A) / (2 * config.head_dim()))),
      vocab_(vocab_of(layout_)),
      max_batch_(max_batch),
      policy_(policy),
      act_dtype_(gemm_->input_dtype) {
  const int T = cfg_.seq_len, D = cfg_.head_dim();
  const size_t N = size_t(max_batch) * T, C = cfg_.dim, V = size_t(vocab_.count);
  const size_t A = size_t(w_.A), Q = size_t(w_.Q), F = size_t(w_.F);
  rope_cos_.allocate(size_t(T) * D / 2, MemCategory::workspace);
  rope_sin_.allocate(size_t(T) * D / 2, MemCategory::workspace);
  rope_tables(rope_cos_.data(), rope_sin_.data(), T, D, cfg_.rope_theta, cfg_.rope_scaling);
  if (layout_.head_segment().count > 0) {
    logits_.allocate(N * V, MemCategory::workspace);
    // The head's GEMMs would round the gradient into their scratch; the loss does it instead.
    if (act_dtype_ != DType::f32) logits_grad16_.allocate((N * V + 1) / 2, MemCategory::workspace);
    losses_.allocate(N, MemCategory::workspace);
  }
  hooks_->reserve(N, cfg_.dim);
  d_resid_.allocate(resid_rows(int(N)) * C, MemCategory::workspace);
  d_ln_.allocate(N * C, MemCategory::workspace);
  d_att_.allocate(N * A, MemCategory::workspace);
  d_qkv_.allocate(N * Q, MemCategory::workspace);
  d_gate_up_.allocate(N * 2 * F, MemCategory::workspace);
  d_h_.allocate(N * F, MemCategory::workspace);
  if (act_dtype_ != DType::f32) staging_.allocate(N * std::max(A, 2 * F), MemCategory::workspace);
  // MoE blocks: their routing statistics, selection bias (zero until the aux-loss-free update moves
  // it) and one backward scratch shared by every MoE block.
  moe_stats_.layers.resize(size_t(cfg_.n_layers));
  for (int l : parts_.layers)
    if (layout_.block_kind(l) == BlockKind::moe) {
      moe_stats_.layers[size_t(l)].routed.assign(size_t(w_.E), 0.0);
      if (moe_scratch_.size() == 0) moe_scratch_.allocate(moe_scratch_floats(w_, N), MemCategory::workspace);
    }
  if (cfg_.moe.enabled()) router_bias_.assign(size_t(cfg_.n_layers) * size_t(w_.E), 0.0f);
  // The whole model's activations exist from the start, so their bytes are in the ledger at once.
  // (Parts that hold every block, the embedding and the head are the whole model: expert
  // parallelism's, which differ only in the experts.)
  if (!parts || (parts_.embedding && parts_.head && int(parts_.layers.size()) == cfg_.n_layers))
    whole_ = make_activations(0, cfg_.n_layers, true);
}

Llama::~Llama() = default;

void Llama::set_positions(const std::vector<int>& positions) {
  const int D = cfg_.head_dim(), half = D / 2;
  if (positions.size() > size_t(cfg_.seq_len))
    throw std::invalid_argument("set_positions: more positions than seq_len rows");
  int end = 1;
  for (int p : positions) end = std::max(end, p + 1);
  // The rows of the table a serial model of the longer sequence builds: the same values bit for bit.
  std::vector<float> cos(size_t(end) * half), sin(size_t(end) * half);
  rope_tables(cos.data(), sin.data(), end, D, cfg_.rope_theta, cfg_.rope_scaling);
  for (size_t t = 0; t < positions.size(); ++t)
    for (int i = 0; i < half; ++i) {
      rope_cos_.data()[t * half + i] = cos[size_t(positions[t]) * half + i];
      rope_sin_.data()[t * half + i] = sin[size_t(positions[t]) * half + i];
    }
}

void Llama::set_document_breaks(const DocumentBreaks& breaks) {
  if (breaks.bos < 0 && breaks.eos < 0)
    throw std::invalid_argument("document masks need the tokenizer's BOS or EOS id; it has neither");
  row_marker_ = std::make_unique<RowDocumentMarker>(breaks);
  doc_marker_ = row_marker_.get();
}

void Llama::mark_documents(Activations& acts, const int32_t* tokens, int B, int T) const {
  if (!doc_marker_) return;
  const int D = cfg_.head_dim(), half = D / 2;
  const size_t N = size_t(B) * size_t(T);
  std::vector<int32_t> doc(N), pos(N);
  doc_marker_->mark(tokens, B, T, doc.data(), pos.data());
  // Rows of the table rope_tables makes for the longest document (a row's values do not depend on
  // the table's length), so a document rotates bitwise as the same tokens run on their own.
  int end = 1;
  for (int32_t p : pos) end = std::max(end, int(p) + 1);
  std::vector<float> table_cos(size_t(end) * half), table_sin(size_t(end) * half);
  rope_tables(table_cos.data(), table_sin.data(), end, D, cfg_.rope_theta, cfg_.rope_scaling);
  std::vector<float> cos(N * size_t(half)), sin(N * size_t(half));
  for (size_t t = 0; t < N; ++t)
    for (int i = 0; i < half; ++i) {
      cos[t * half + i] = table_cos[size_t(pos[t]) * half + i];
      sin[t * half + i] = table_sin[size_t(pos[t]) * half + i];
    }
  acts.set_documents(std::move(doc), std::move(cos), std::move(sin));
}

void Llama::check_shape(int B, int T) const {
  if (B < 1 || B > max_batch_ || T < 1 || T > cfg_.seq_len)
    throw std::runtime_error(fmt::format(
        "batch of {} x {} tokens does not fit the model built for {} x {} (micro_batch x seq_len)",
        B, T, max_batch_, cfg_.seq_len));
  hooks_->check_batch(B, T);
}

Activations& Llama::whole() {
  if (!whole_)
    throw std::logic_error("the whole-model entry points need the model built with all its parts; this "
                           "one is a pipeline stage's: run it through StageChunks");
  return *whole_;
}

std::unique_ptr<Activations> Llama::make_activations(int first, int last, bool head) const {
  const int N = max_batch_ * cfg_.seq_len;
  std::vector<BlockKind> kinds;
  for (int l = first; l < last; ++l) kinds.push_back(layout_.block_kind(l));
  return std::make_unique<Activations>(w_, kinds, N, int(resid_rows(N)), policy_, head, act_dtype_);
}

size_t Llama::boundary_floats(int B, int T) const { return resid_rows(B * T) * size_t(cfg_.dim); }

double Llama::forward_backward(const float* params, float* grads, const int32_t* tokens,
                               const int32_t* targets, int B, int T, float grad_scale) {
  FlatParams src(params);
  FlatGrads sink(grads);
  return forward_backward(src, sink, tokens, targets, B, T, grad_scale);
}

double Llama::forward_loss(const float* params, const int32_t* tokens, const int32_t* targets, int B,
                           int T) {
  FlatParams src(params);
  return forward_loss(src, tokens, targets, B, T);
}

const float* Llama::forward_logits(ParamSource& src, const int32_t* tokens, int B, int T) {
  check_shape(B, T);
  whole();
  mark_documents(*whole_, tokens, B, T);
  embed(src, *whole_, tokens, B * T, 0);
  blocks_forward(src, *whole_, 0, cfg_.n_layers, whole_->final_out(), B, T, layout_.head_segment());
  head_forward(acquire_head(src, ParamSegment{}), *whole_, 0, B * T);
  release_head(src);
  return logits_.data();
}

const float* Llama::forward_logits(const float* params, const int32_t* tokens, int B, int T) {
  FlatParams src(params);
  return forward_logits(src, tokens, B, T);
}

const float* Llama::forward_last_logits(const float* params, const int32_t* tokens, int T) {
  FlatParams src(params);
  check_shape(1, T);
  whole();
  mark_documents(*whole_, tokens, 1, T);
  embed(src, *whole_, tokens, T, 0);
  blocks_forward(src, *whole_, 0, cfg_.n_layers, whole_->final_out(), 1, T, layout_.head_segment());
  head_forward(acquire_head(src, ParamSegment{}), *whole_, T - 1, 1);
  release_head(src);
  return logits_.data();
}

}  // namespace ff
