#include "parallel/context/context_attention.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <limits>
#include <utility>

#include "kernels/attention_precision.h"

namespace ff {

namespace {

// A K/V piece: rows (b, t) of [k heads | v heads], 2 Hkv D floats each.
long piece_row(const AttentionShape& s) { return 2L * s.Hkv * s.D; }
size_t piece_floats(const AttentionShape& s) { return size_t(s.B) * s.T * size_t(piece_row(s)); }

void pack_piece(float* piece, const float* k, const float* v, const AttentionShape& s) {
  const size_t n = size_t(s.B) * s.T, w = size_t(s.Hkv) * s.D;
  for (size_t r = 0; r < n; ++r) {
    float* dst = piece + r * 2 * w;
    const float *kr = k + r * size_t(s.kv_stride), *vr = v + r * size_t(s.kv_stride);
    for (size_t i = 0; i < w; ++i) dst[i] = kr[i], dst[w + i] = vr[i];
  }
}

void add_piece(float* dk, float* dv, const float* dpiece, const AttentionShape& s) {
  const size_t n = size_t(s.B) * s.T, w = size_t(s.Hkv) * s.D;
  for (size_t r = 0; r < n; ++r) {
    const float* src = dpiece + r * 2 * w;
    float *kr = dk + r * size_t(s.kv_stride), *vr = dv + r * size_t(s.kv_stride);
    for (size_t i = 0; i < w; ++i) kr[i] += src[i], vr[i] += src[w + i];
  }
}

// The block of local query chunk a against chunk bk of a piece, positions from the layout, and
// out/lse strides of the local (B, T, H, D) / (B, H, T) tensors.
// With document ids (all: every rank's, (cp, B, T)), the block compares query chunk a of rank
// `me` with key chunk bk of rank src.
AttentionBlock chunk_block(const AttentionShape& s, int c, int q_pos, int k_pos, const int32_t* all, int me, int a,
                           int src, int bk) {
  AttentionBlock b{};
  b.B = s.B, b.Tq = c, b.Tk = c, b.H = s.H, b.Hkv = s.Hkv, b.D = s.D;
  b.q_row = s.q_stride, b.q_batch = long(s.T) * s.q_stride;
  b.kv_row = piece_row(s), b.kv_batch = long(s.T) * piece_row(s);
  b.o_row = long(s.H) * s.D, b.o_batch = long(s.T) * s.H * s.D;
  b.l_head = s.T, b.l_batch = long(s.H) * s.T;
  b.q_pos = q_pos, b.k_pos = k_pos;
  b.mask = AttentionMask::causal;
  if (all) {
    const size_t piece = size_t(s.B) * size_t(s.T);
    b.q_doc = all + me * piece + size_t(a) * c, b.k_doc = all + src * piece + size_t(bk) * c;
    b.q_doc_batch = b.k_doc_batch = s.T;
    b.tiles = s.tiles;
  }
  return b;
}

}  // namespace

ContextAttention::ContextAttention(const Comm& group, const ContextLayout& layout, CpComm mode,
                                   Tracer* tracer)
    : group_(group), layout_(layout), mode_(mode), tracer_(tracer) {}

float* ContextAttention::buffer(TrackedBuffer<float>& b, size_t n) {
  if (b.size() < n) b.allocate(n, MemCategory::workspace);
  return b.data();
}

void ContextAttention::wait_exposed(CommRequest& r, const char* what) {
  const double t0 = tracer_ ? tracer_->now_us() : 0;
  const auto w0 = std::chrono::steady_clock::now();
  r.wait();
  exposed_us_ += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - w0).count();
  if (tracer_ && r.completed_us() > 0) {  // an empty request (nothing was sent) has no span
    tracer_->span(std::string(what) + " (wait)", "cp wait", t0, tracer_->now_us());
    tracer_->span(what, "cp comm", r.started_us(), r.completed_us());
  }
}

void ContextAttention::attend_piece(const GemmContext& gemm, float* att, float* lse, const float* q, const float* piece,
                                    int src, const AttentionShape& s) {
  TraceScope scope(tracer_, "attention blocks of rank " + std::to_string(src), "cp compute");
  const int c = s.T / 2;
  const int32_t* docs = s.doc ? docs_.data() : nullptr;
  const auto mine = layout_.chunks_of(layout_.rank()), theirs = layout_.chunks_of(src);
  float* part = buffer(part_, size_t(s.B) * c * s.H * s.D);
  float* part_lse = buffer(part_lse_, size_t(s.B) * s.H * c);
  for (int a = 0; a < 2; ++a)
    for (int bk = 0; bk < 2; ++bk) {
      const int q_pos = mine[a] * c, k_pos = theirs[bk] * c;
      if (k_pos > q_pos + c - 1) continue;  // every key after every query: nothing visible
      AttentionBlock blk = chunk_block(s, c, q_pos, k_pos, docs, layout_.rank(), a, src, bk);
      const MergeLayout acc{s.B, c, s.H, s.D, blk.o_batch, blk.o_row, blk.l_batch, blk.l_head};
      // The partial goes to a compact scratch block, then merges into the chunk's rows.
      blk.o_row = long(s.H) * s.D, blk.o_batch = long(c) * s.H * s.D;
      blk.l_head = c, blk.l_batch = long(s.H) * c;
      const float* kp = piece + size_t(bk) * c * size_t(blk.kv_row);
      const float* qa = q + size_t(a) * c * s.q_stride;
      block_flops_ +=
          attention_block_forward_run_precision(gemm, part, part_lse, qa, kp, kp + s.Hkv * s.D, blk);
      const MergeLayout p{s.B, c, s.H, s.D, blk.o_batch, blk.o_row, blk.l_batch, blk.l_head};
      attention_merge(att + size_t(a) * c * s.H * s.D, lse + size_t(a) * c, acc, part, part_lse, p);
    }
}

void ContextAttention::attend_piece_backward(const GemmContext& gemm, float* dq, float* dpiece, const float* d_att,
                                             const float* q, const float* piece, const float* att, const float* lse,
                                             int src, const AttentionShape& s) {
  TraceScope scope(tracer_, "attention backward blocks of rank " + std::to_string(src), "cp compute");
  const int c = s.T / 2;
  const int32_t* docs = s.doc ? docs_.data() : nullptr;
  const auto mine = layout_.chunks_of(layout_.rank()), theirs = layout_.chunks_of(src);
  for (int a = 0; a < 2; ++a)
    for (int bk = 0; bk < 2; ++bk) {
      const int q_pos = mine[a] * c, k_pos = theirs[bk] * c;
      if (k_pos > q_pos + c - 1) continue;
      const AttentionBlock blk = chunk_block(s, c, q_pos, k_pos, docs, layout_.rank(), a, src, bk);
      const size_t qa = size_t(a) * c, kb = size_t(bk) * c * size_t(blk.kv_row);
      const size_t oa = qa * s.H * s.D;
      block_flops_ += attention_block_backward_run_precision(gemm, dq + qa * s.q_stride, dpiece + kb,
                                                             dpiece + kb + s.Hkv * s.D, d_att + oa,
                                                             q + qa * s.q_stride, piece + kb,
                                                             piece + kb + s.Hkv * s.D, att + oa, lse + qa, blk);
    }
}

const int32_t* ContextAttention::gather_documents(const AttentionShape& s) {
  if (!s.doc) return nullptr;
  const size_t n = size_t(s.B) * size_t(s.T);
  docs_.resize(n * size_t(layout_.cp()));
  group_.all_gather(ConstCommPtr(s.doc), CommPtr(docs_.data()), docs_.size());
  return docs_.data();
}

void ContextAttention::forward(const GemmContext& gemm, float* att, float* lse, const float* q, const float* k,
                               const float* v, const AttentionShape& s) {
  gather_documents(s);
  if (mode_ == CpComm::a2a) return a2a_forward(gemm, att, lse, q, k, v, s);
  // Every row starts empty: out 0, lse -inf; each piece's blocks merge in.
  const size_t n_out = size_t(s.B) * s.T * s.H * s.D, n_lse = size_t(s.B) * s.H * s.T;
  for (size_t i = 0; i < n_out; ++i) att[i] = 0;
  for (size_t i = 0; i < n_lse; ++i) lse[i] = -std::numeric_limits<float>::infinity();
  pack_piece(buffer(kv_[0], piece_floats(s)), k, v, s);
  if (mode_ == CpComm::ring) ring_forward(gemm, att, lse, q, s);
  else gather_forward(gemm, att, lse, q, s);
}

void ContextAttention::backward(const GemmContext& gemm, float* dq, float* dk, float* dv, const float* d_att,
                                const float* q, const float* k, const float* v, const float* att, const float* lse,
                                const AttentionShape& s) {
  gather_documents(s);
  if (mode_ == CpComm::a2a) return a2a_backward(gemm, dq, dk, dv, d_att, q, k, v, att, lse, s);
  pack_piece(buffer(kv_[0], piece_floats(s)), k, v, s);
  const float* own = mode_ == CpComm::ring ? ring_backward(gemm, dq, d_att, q, att, lse, s)
                                           : gather_backward(gemm, dq, d_att, q, att, lse, s);
  add_piece(dk, dv, own, s);  // this rank's own dK/dV, back from its travels
}

void ContextAttention::ring_forward(const GemmContext& gemm, float* att, float* lse, const float* q,
                                    const AttentionShape& s) {
  const int cp = layout_.cp(), r = layout_.rank();
  const size_t n = piece_floats(s);
  float* cur = kv_[0].data();
  float* next = buffer(kv_[1], n);
  for (int step = 0; step < cp; ++step) {
    CommRequest send, recv;
    if (step + 1 < cp) {  // the next piece travels while this one is computed
      send = group_.send_async(cur, n, (r + 1) % cp, 0);
      recv = group_.recv_async(next, n, (r + cp - 1) % cp, 0);
    }
    attend_piece(gemm, att, lse, q, cur, (r - step + cp) % cp, s);
    if (step + 1 < cp) {
      wait_exposed(recv, "K/V recv");
      wait_exposed(send, "K/V send");
      std::swap(cur, next);
    }
  }
}

// Each piece's dK/dV accumulator follows it around the ring. A rank computes its share for the
// piece it holds into a scratch buffer while the piece's accumulator is still arriving from the
// previous rank, then adds the two and sends the sum on: the hop overlaps the compute, and only
// the add waits for it. After cp steps every accumulator is back with its owner.
const float* ContextAttention::ring_backward(const GemmContext& gemm, float* dq, const float* d_att, const float* q,
                                             const float* att, const float* lse, const AttentionShape& s) {
  const int cp = layout_.cp(), r = layout_.rank();
  const size_t n = piece_floats(s);
  float* cur = kv_[0].data();
  float* next = buffer(kv_[1], n);
  float* acc[2] = {buffer(dkv_[0], n), buffer(dkv_[1], n)};
  float* mine = buffer(dkv_[2], n);  // this step's share
  const int to = (r + 1) % cp, from = (r + cp - 1) % cp;
  CommRequest dsend;
  for (int step = 0; step < cp; ++step) {
    float* into = acc[step % 2];
    CommRequest send, recv, drecv;
    if (step > 0) drecv = group_.recv_async(into, n, from, 1);  // the piece's accumulator so far
    if (step + 1 < cp) {
      send = group_.send_async(cur, n, to, 0);
      recv = group_.recv_async(next, n, from, 0);
    }
    float* share = step == 0 ? into : mine;
    std::fill(share, share + n, 0.0f);
    attend_piece_backward(gemm, dq, share, d_att, q, cur, att, lse, (r - step + cp) % cp, s);
    if (step > 0) {
      wait_exposed(drecv, "dK/dV recv");
      for (size_t i = 0; i < n; ++i) into[i] += mine[i];
    }
    wait_exposed(dsend, "dK/dV send");  // the buffer the next step receives into was its source
    dsend = group_.send_async(into, n, to, 1);
    if (step + 1 < cp) {
      wait_exposed(recv, "K/V recv");
      wait_exposed(send, "K/V send");
      std::swap(cur, next);
    }
  }
  // The last hop brings this rank's own piece's accumulator home (into the buffer whose send the
  // last step waited for). Posted before waiting on this rank's own last send, which the
  // neighbour receives only here too: waiting first would deadlock on a rendezvous send.
  float* home = acc[cp % 2];
  CommRequest last = group_.recv_async(home, n, from, 1);
  wait_exposed(dsend, "dK/dV send");
  wait_exposed(last, "dK/dV recv");
  return home;
}

void ContextAttention::gather_forward(const GemmContext& gemm, float* att, float* lse, const float* q,
                                      const AttentionShape& s) {
  const int cp = layout_.cp();
  const size_t n = piece_floats(s);
  float* all = buffer(full_, n * cp);
  CommRequest g = group_.all_gather_async(kv_[0].data(), all, n * cp);
  wait_exposed(g, "K/V all-gather");
  for (int src = 0; src < cp; ++src) attend_piece(gemm, att, lse, q, all + src * n, src, s);
}

const float* ContextAttention::gather_backward(const GemmContext& gemm, float* dq, const float* d_att, const float* q,
                                              const float* att, const float* lse, const AttentionShape& s) {
  const int cp = layout_.cp();
  const size_t n = piece_floats(s);
  float* all = buffer(full_, n * cp);
  float* dall = buffer(dfull_, n * cp);
  CommRequest g = group_.all_gather_async(kv_[0].data(), all, n * cp);
  wait_exposed(g, "K/V all-gather");
  for (size_t i = 0; i < n * cp; ++i) dall[i] = 0;
  for (int src = 0; src < cp; ++src)
    attend_piece_backward(gemm, dq, dall + src * n, d_att, q, all + src * n, att, lse, src, s);
  float* own = buffer(dkv_[0], n);
  CommRequest rs = group_.reduce_scatter_async(dall, own, n * cp);
  wait_exposed(rs, "dK/dV reduce-scatter");
  return own;
}

}  // namespace ff
