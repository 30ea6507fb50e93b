#include "plan/memory_model.h"

#include <algorithm>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "io/file_reader.h"
#include "parallel/pipeline/pipeline_schedule.h"
#include "plan/layout_workspace.h"
#include "plan/rank_model.h"

namespace ff {

int64_t RankMemory::total() const {
  int64_t t = 0;
  for (int64_t b : bytes) t += b;
  return t;
}

std::string RankMemory::describe() const {
  std::string s;
  for (int i = 0; i < kMemCategories; ++i)
    s += fmt::format("{} {}, ", mem_category_name(MemCategory(i)), format_bytes(bytes[size_t(i)]));
  return s + "checkpoint staging " + format_bytes(checkpoint_bytes) + ", total " + format_bytes(peak());
}

namespace {

constexpr int64_t kF = sizeof(float);

// Model states under the layout's ZeRO stage over the shard group (dp x cp), as
// ReplicatedState / ShardedState allocate them. Rank 0 of the group holds the longest chunks.
void add_model_states(RankMemory& m, const ParamLayout& layout, int ranks, int zero) {
  const int64_t psi = int64_t(layout.total());
  auto& b = m.bytes;
  if (zero == 0 || ranks == 1) {
    b[size_t(MemCategory::params)] += psi * kF, b[size_t(MemCategory::grads)] += psi * kF;
    b[size_t(MemCategory::optimizer)] += 2 * psi * kF;
    return;
  }
  int64_t shard = 0, max_chunk = 1, max_seg = 0;
  for (const ParamSegment& s : layout.segments()) {
    const int64_t chunk = (int64_t(s.count) + ranks - 1) / ranks;  // chunk_range's first ranks
    shard += chunk, max_chunk = std::max(max_chunk, chunk), max_seg = std::max(max_seg, int64_t(s.count));
  }
  b[size_t(MemCategory::optimizer)] += 2 * shard * kF;
  b[size_t(MemCategory::params)] += (zero == 3 ? shard : psi) * kF;
  if (zero == 1) {
    b[size_t(MemCategory::grads)] += psi * kF;        // the full gradient
    b[size_t(MemCategory::workspace)] += shard * kF;  // the reduce-scatter's output
    return;
  }
  b[size_t(MemCategory::grads)] += shard * kF;
  b[size_t(MemCategory::workspace)] += 2 * (max_seg + max_chunk) * kF;  // two staging buffers
  if (zero == 3) b[size_t(MemCategory::workspace)] += 3 * max_seg * kF;  // the gather pool
}

// Per chunk of a pipeline rank, the most micro-batches whose stash is alive at once: a forward
// takes a slot, the backward (ZB-H1: the weight pass) gives it back, as LlamaStages does.
std::vector<int> stashes_in_flight(const LayoutSpec& L, int pp_rank) {
  const PipeScheduleSpec spec{L.schedule, L.pp, L.grad_accum, L.chunks};
  std::vector<int> live(size_t(L.chunks), 0), peak(size_t(L.chunks), 0);
  const auto lists = make_schedule(spec);
  for (const PipeAction& a : lists[size_t(pp_rank)]) {
    if (a.peer_rank >= 0) continue;  // a send or receive
    int& n = live[size_t(a.chunk)];
    if (a.op == PipeOp::forward) peak[size_t(a.chunk)] = std::max(peak[size_t(a.chunk)], ++n);
    if (a.op == PipeOp::backward || a.op == PipeOp::backward_weight) --n;
  }
  return peak;
}

// The kernels' per-thread scratch (kernels/scratch.h): one float buffer per thread, grown to the
// largest request among flash attention's forward and backward and, on the calling thread, the
// transposed weight gradient oneDNN's linear_backward uses when out >= 4 in and, where bf16 is
// emulated, the widened operands of the 16-bit products (`widen`).
int64_t kernel_scratch_floats(const ModelConfig& c, const BlockWidths& w, int64_t vocab, bool head, int B,
                              int threads, Precision p, int64_t widen) {
  const AttentionScratch a = attention_scratch_floats(c, p);
  const int64_t fwd = a.forward, bwd = a.backward;
  const int64_t kv_heads = (w.Q - w.A) / (2 * c.head_dim());
  // Threads that get a task: forward runs (batch, head) pairs, backward (batch, kv head) pairs.
  const int64_t fwd_threads = std::min<int64_t>(threads, B * w.H), bwd_threads = std::min<int64_t>(threads, B * kv_heads);
  int64_t per_thread_peak = 0;
  for (int64_t t = 0; t < threads; ++t)
    per_thread_peak += std::max(t < fwd_threads ? fwd : 0, t < bwd_threads ? bwd : 0);
  int64_t main = std::max({fwd, bwd, widen});
#if defined(FIVEFOLD_GEMM_ONEDNN)
  if (2 * w.F >= 4 * w.C) main = std::max(main, w.C * 2 * w.F);
  if (head && vocab >= 4 * w.C) main = std::max(main, w.C * vocab);
#else
  (void)vocab, (void)head;
#endif
  return per_thread_peak - std::max(fwd, bwd) + main;  // thread 0 is the calling thread
}

}  // namespace

RankMemory estimate_rank_memory(const ModelConfig& c, const LayoutSpec& L, int pp_rank, const EngineHost& host) {
  RankMemory m;
  m.pp_rank = pp_rank;
  const RankModel rm = rank_model(c, L, pp_rank);
  const ParamLayout& layout = *rm.layout;
  const std::vector<ModelChunk>& chunks = rm.chunks;
  add_model_states(m, layout, L.dp * L.cp, L.zero);
  m.checkpoint_bytes = int64_t(kReadStagingBytes);

  const BlockWidths& w = rm.widths;
  const int64_t N = int64_t(L.micro_batch) * c.seq_len / L.cp;
  const int64_t R = L.sp ? N / L.tp : N, C = c.dim;
  const int64_t V = rm.vocab_rows;
  const bool head = layout.head_segment().count > 0;
  int64_t acts = 0, ws = 0;
  std::vector<int> in_flight(chunks.size(), 1);
  if (L.pp > 1) in_flight = stashes_in_flight(L, pp_rank);
  const int64_t deferred_per_block = N * (2 * C + 2 * w.F + w.Q) + 2 * C;  // Llama::deferred_floats_per_block
  for (size_t k = 0; k < chunks.size(); ++k) {
    const ModelChunk& ch = chunks[k];
    std::vector<BlockKind> kinds;
    for (int l = ch.first_layer; l < ch.last_layer; ++l) kinds.push_back(layout.block_kind(l));
    // Each tensor's element type is activation_floats' (model/activations.h), in 4-byte units.
    const ActivationFloats f = activation_floats(w, kinds, N, R, L.recompute, ch.head, gemm_input_dtype_of(L.gemm));
    const int64_t stashes = std::max(1, in_flight[k]);
    acts += stashes * f.kept, ws += stashes * f.scratch;  // every stash has its own scratch
    if (L.pp > 1 && ch.head && !ch.embedding) acts += stashes * R * C;  // the head's output gradient
    if (L.pp > 1 && L.schedule == PipeSchedule::zb_h1)
      acts += stashes * (int64_t(kinds.size()) * deferred_per_block + (ch.embedding ? R * C : 0));
  }
  // Llama's own scratch: RoPE tables, logits and losses (head), the backward's gradient buffers.
  ws += c.seq_len * c.head_dim();
  if (head) ws += N * V + N;
  if (head && gemm_input_dtype_of(L.gemm) != DType::f32) ws += (N * V + 1) / 2;  // Llama::logits_grad16_
  ws += R * C + N * C + N * w.A + N * w.Q + 3 * N * w.F;
  if (gemm_input_dtype_of(L.gemm) != DType::f32) ws += N * std::max(w.A, 2 * w.F);  // Llama::staging_
  if (L.tp > 1) ws += 3 * N + N * C + (L.sp ? N * C : 0);  // TensorParallelHooks::reserve
  // Pipeline boundary buffers (executor's pool): the receive and send buffers of the activations
  // and gradients of about one micro-batch per direction and chunk.
  if (L.pp > 1) ws += 4 * int64_t(chunks.size()) * R * C;
  bool has_moe = false;
  for (int l : rm.parts.layers) has_moe = has_moe || layout.block_kind(l) == BlockKind::moe;
  ws += kernel_scratch_floats(c, w, V, head, L.micro_batch, std::max(1, host.threads), L.gemm,
                              emulated_widen_floats(L, w, N, V, head, has_moe, host));
  const PrecisionBytes pb = precision_bytes(L.gemm);  // the one place precision changes bytes
  if (has_weight_copy(L)) m.bytes[size_t(MemCategory::params)] += int64_t(layout.total()) * pb.weight_copy;
  m.bytes[size_t(MemCategory::params)] += packed_weight_bytes(layout, c, L, host);
  m.bytes[size_t(MemCategory::activations)] += acts * kF;
  if (L.dp_mode == DpMode::diloco) {  // DilocoState: θ_global and the outer momentum, Δ (and its bf16 wire copy)
    const int64_t n = int64_t(layout.total());
    m.bytes[size_t(MemCategory::optimizer)] += 2 * n * kF;
    m.bytes[size_t(MemCategory::workspace)] += n * kF + (L.pseudo_grad == DType::bf16 ? n * 2 : 0);
  }
  m.bytes[size_t(MemCategory::workspace)] += ws * kF + context_workspace_bytes(c, L, w) +
                                             moe_workspace_bytes(c, L, w, has_moe) +
                                             gemm_input_scratch_bytes(L, w, N, R, V, head, has_moe) +
                                             tile_gemm_scratch_bytes(L, w, N, V, head, has_moe, host);
  return m;
}

RankMemory estimate_peak_memory(const ModelConfig& c, const LayoutSpec& L, const EngineHost& host) {
  RankMemory best;
  for (int r = 0; r < L.pp; ++r) {
    RankMemory m = estimate_rank_memory(c, L, r, host);
    if (r == 0 || m.peak() > best.peak()) best = m;
  }
  return best;
}

}  // namespace ff
