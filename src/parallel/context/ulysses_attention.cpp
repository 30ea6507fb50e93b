// cp_comm = a2a (DeepSpeed-Ulysses): attention with the sequence whole and the heads split. An
// all-to-all turns this rank's rows of every head into every row of its own heads, the serial
// flash kernel runs on the whole (head-tail ordered back into position order) sequence, and an
// all-to-all turns the result back. Needs the heads (and K/V heads) to divide by cp.
#include <algorithm>

#include "kernels/attention_precision.h"
#include "parallel/context/context_attention.h"

namespace ff {

namespace {

// A strided row-major operand: row n at p + n * stride; rank j's heads are the `width` floats
// at j * width. (K and V are two operands of the same fused rows.)
struct Cols {
  const float* p;
  long stride;
  int width;
};
struct OutCols {
  float* p;
  long stride;
  int width;
};

int total_width(const std::vector<Cols>& c) {
  int w = 0;
  for (const Cols& x : c) w += x.width;
  return w;
}

// send (cp, rows, W): for each destination j, its heads of every operand, row by row.
void pack_heads(float* send, size_t rows, int cp, const std::vector<Cols>& ops) {
  const size_t W = size_t(total_width(ops));
  for (int j = 0; j < cp; ++j)
    for (size_t n = 0; n < rows; ++n) {
      float* d = send + (size_t(j) * rows + n) * W;
      for (const Cols& o : ops) {
        const float* s = o.p + long(n) * o.stride + long(j) * o.width;
        d = std::copy(s, s + o.width, d);
      }
    }
}

// The inverse: recv (cp, rows, W) from each source j into its heads of every operand (added).
void unpack_heads_add(const float* recv, size_t rows, int cp, const std::vector<OutCols>& ops) {
  size_t W = 0;
  for (const OutCols& o : ops) W += size_t(o.width);
  for (int j = 0; j < cp; ++j)
    for (size_t n = 0; n < rows; ++n) {
      const float* s = recv + (size_t(j) * rows + n) * W;
      for (const OutCols& o : ops) {
        float* d = o.p + long(n) * o.stride + long(j) * o.width;
        for (int i = 0; i < o.width; ++i) d[i] += s[i];
        s += o.width;
      }
    }
}

// recv (cp, B, Tl, W) from each source i -> full (B, T, W) at i's global positions, or back.
void rows_to_sequence(float* full, const float* recv, const ContextLayout& L, int B, size_t W) {
  const int Tl = L.local_len(), T = L.seq_len();
  for (int i = 0; i < L.cp(); ++i) {
    const std::vector<int> pos = L.positions_of(i);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < Tl; ++t) {
        const float* s = recv + ((size_t(i) * B + b) * Tl + t) * W;
        std::copy(s, s + W, full + (size_t(b) * T + pos[t]) * W);
      }
  }
}
void sequence_to_rows(float* send, const float* full, const ContextLayout& L, int B, size_t W) {
  const int Tl = L.local_len(), T = L.seq_len();
  for (int i = 0; i < L.cp(); ++i) {
    const std::vector<int> pos = L.positions_of(i);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < Tl; ++t) {
        const float* s = full + (size_t(b) * T + pos[t]) * W;
        std::copy(s, s + W, send + ((size_t(i) * B + b) * Tl + t) * W);
      }
  }
}

// lse (B, H, T) <-> rows (B*T, H), so the log-sum-exp travels as one more column of each row.
void lse_to_rows(float* rows, const float* lse, int B, int H, int T) {
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t) rows[(size_t(b) * T + t) * H + h] = lse[(size_t(b) * H + h) * T + t];
}
void rows_to_lse(float* lse, const float* rows, long stride, int B, int H, int T) {
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t) lse[(size_t(b) * H + h) * T + t] = rows[(size_t(b) * T + t) * stride + h];
}

}  // namespace

const int32_t* ContextAttention::sequence_documents(const AttentionShape& s) {
  if (!s.doc) return nullptr;
  const int T = layout_.seq_len();
  sequence_docs_.resize(size_t(s.B) * T);
  for (int src = 0; src < layout_.cp(); ++src) {
    const std::vector<int> pos = layout_.positions_of(src);
    const int32_t* piece = docs_.data() + size_t(src) * s.B * s.T;
    for (int b = 0; b < s.B; ++b)
      for (int t = 0; t < s.T; ++t) sequence_docs_[size_t(b) * T + pos[size_t(t)]] = piece[size_t(b) * s.T + t];
  }
  return sequence_docs_.data();
}

void ContextAttention::a2a_forward(const GemmContext& gemm, float* att, float* lse, const float* q, const float* k,
                                   const float* v, const AttentionShape& s) {
  const int cp = layout_.cp(), T = layout_.seq_len(), hq = s.H / cp, hk = s.Hkv / cp, D = s.D;
  const size_t rows = size_t(s.B) * s.T, W = size_t(hq + 2 * hk) * D, Wo = size_t(hq) * D + hq;
  float* send = buffer(a2a_[0], cp * rows * std::max(W, Wo));
  float* recv = buffer(a2a_[1], cp * rows * std::max(W, Wo));
  float* qkv = buffer(a2a_[2], size_t(s.B) * T * W);               // (B, T, W): my heads, all rows
  float* out = buffer(a2a_[3], size_t(s.B) * T * Wo);              // (B, T, [out | lse])
  float* l_full = buffer(a2a_[4], size_t(s.B) * hq * T);           // (B, hq, T)
  pack_heads(send, rows, cp, {{q, s.q_stride, hq * D}, {k, s.kv_stride, hk * D}, {v, s.kv_stride, hk * D}});
  CommRequest a = group_.all_to_all_async(send, recv, rows * W);
  wait_exposed(a, "q/k/v all-to-all");
  rows_to_sequence(qkv, recv, layout_, s.B, W);
  {
    TraceScope scope(tracer_, "attention (my heads, whole sequence)", "cp compute");
    const int w = int(W);
    attention_forward_run_precision(gemm, out, l_full, qkv, qkv + hq * D, qkv + (hq + hk) * D,
                                    {s.B, T, hq, hk, D, w, w, sequence_documents(s), s.tiles});
  }
  // out (B, T, hq, D) is dense; spread it to rows of Wo with the lse beside each row.
  for (size_t n = size_t(s.B) * T; n-- > 0;)
    std::copy_backward(out + n * hq * D, out + (n + 1) * hq * D, out + n * Wo + hq * D);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < hq; ++h)
      for (int t = 0; t < T; ++t)
        out[(size_t(b) * T + t) * Wo + hq * D + h] = l_full[(size_t(b) * hq + h) * T + t];
  sequence_to_rows(send, out, layout_, s.B, Wo);
  CommRequest back = group_.all_to_all_async(send, recv, rows * Wo);
  wait_exposed(back, "out all-to-all");
  const size_t n_att = rows * s.H * D;
  for (size_t i = 0; i < n_att; ++i) att[i] = 0;
  float* lrows = buffer(a2a_[5], rows * s.H);
  for (size_t i = 0; i < rows * s.H; ++i) lrows[i] = 0;
  unpack_heads_add(recv, rows, cp, {{att, long(s.H) * D, hq * D}, {lrows, s.H, hq}});
  rows_to_lse(lse, lrows, s.H, s.B, s.H, s.T);
}

void ContextAttention::a2a_backward(const GemmContext& gemm, float* dq, float* dk, float* dv, const float* d_att,
                                    const float* q, const float* k, const float* v, const float* att, const float* lse,
                                    const AttentionShape& s) {
  const int cp = layout_.cp(), T = layout_.seq_len(), hq = s.H / cp, hk = s.Hkv / cp, D = s.D;
  const size_t rows = size_t(s.B) * s.T, W = size_t(hq + 2 * hk) * D, Wo = size_t(2 * hq) * D + hq;
  float* send = buffer(a2a_[0], cp * rows * std::max(W, Wo));
  float* recv = buffer(a2a_[1], cp * rows * std::max(W, Wo));
  float* qkv = buffer(a2a_[2], size_t(s.B) * T * std::max(W, Wo));
  float* dqkv = buffer(a2a_[3], size_t(s.B) * T * std::max(W, Wo));
  float* l_full = buffer(a2a_[4], size_t(s.B) * hq * T);
  float* lrows = buffer(a2a_[5], rows * s.H);
  // The whole sequence's q/k/v of my heads again (not kept from the forward: that would cost the
  // memory context parallelism saves), and its dout, out and lse.
  pack_heads(send, rows, cp, {{q, s.q_stride, hq * D}, {k, s.kv_stride, hk * D}, {v, s.kv_stride, hk * D}});
  CommRequest a = group_.all_to_all_async(send, recv, rows * W);
  wait_exposed(a, "q/k/v all-to-all");
  rows_to_sequence(qkv, recv, layout_, s.B, W);
  lse_to_rows(lrows, lse, s.B, s.H, s.T);
  pack_heads(send, rows, cp,
             {{d_att, long(s.H) * D, hq * D}, {att, long(s.H) * D, hq * D}, {lrows, s.H, hq}});
  CommRequest b = group_.all_to_all_async(send, recv, rows * Wo);
  wait_exposed(b, "dout/out/lse all-to-all");
  rows_to_sequence(dqkv, recv, layout_, s.B, Wo);  // (B, T, [dout | out | lse]), staged in dqkv
  const size_t N = size_t(s.B) * T;
  float* dout = buffer(part_, N * hq * D);
  float* out = buffer(part_lse_, N * hq * D);
  for (size_t n = 0; n < N; ++n) {
    const float* r = dqkv + n * Wo;
    std::copy(r, r + hq * D, dout + n * hq * D);
    std::copy(r + hq * D, r + 2 * hq * D, out + n * hq * D);
  }
  rows_to_lse(l_full, dqkv + 2 * hq * D, long(Wo), s.B, hq, T);
  std::fill(dqkv, dqkv + N * W, 0.0f);
  {
    TraceScope scope(tracer_, "attention backward (my heads, whole sequence)", "cp compute");
    const int w = int(W);
    const float *qf = qkv, *kf = qkv + hq * D, *vf = qkv + (hq + hk) * D;
    attention_backward_run_precision(gemm, dqkv, dqkv + hq * D, dqkv + (hq + hk) * D, dout, qf, kf, vf, out, l_full,
                                     {s.B, T, hq, hk, D, w, w, sequence_documents(s), s.tiles});
  }
  sequence_to_rows(send, dqkv, layout_, s.B, W);
  CommRequest back = group_.all_to_all_async(send, recv, rows * W);
  wait_exposed(back, "dq/dk/dv all-to-all");
  unpack_heads_add(recv, rows, cp,
                   {{dq, s.q_stride, hq * D}, {dk, s.kv_stride, hk * D}, {dv, s.kv_stride, hk * D}});
}

}  // namespace ff
