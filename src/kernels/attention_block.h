#pragma once
// Attention of one block of queries against one block of keys, the unit ring attention is built
// from: separate query and key lengths, the global position of each block's first row, and a
// mask mode. A call returns the block's partial output, normalised over the keys it saw, with
// its log-sum-exp; partial results over disjoint key blocks merge exactly by log-sum-exp
// (attention_merge), so a query block attended block by block equals whole-sequence attention.
// The backward takes the merged (global) output and log-sum-exp: P = exp(S - lse) is then each
// block's exact share of the softmax, so dq, dk, dv of the blocks simply add up (FlashAttention-2
// with the statistics of the whole row).
//
// Layout with explicit strides (in elements) so a block can be a chunk of a larger buffer:
//   q (b, t, h, d) at q + b*q_batch + t*q_row + h*D + d;  k, v likewise with kv_batch, kv_row
//   out (b, t, h, d) at out + b*o_batch + t*o_row + h*D + d
//   lse (b, h, t) at lse + b*l_batch + h*l_head + t
// Query head h uses KV head h / (H / Hkv). Scale 1/sqrt(D).
//
// Document masks (packed sequences, FlashAttention's varlen): with per-row document ids given
// (monotone along each sequence), query i also sees key j only if both are in the same document.
// The visible keys of a row are then one range [begin, end): a tile no row sees is skipped, and
// counted in the caller's AttentionTileCounts.
#include <cstddef>
#include <cstdint>

namespace ff {

// Key tiles of a document-masked call: `visited` ran, `skipped` were visible to the causal (or
// full) mask but lay wholly outside every query row's document. The caller owns the counter.
struct AttentionTileCounts {
  uint64_t visited = 0, skipped = 0;
};
inline void add_tiles(AttentionTileCounts* to, uint64_t visited, uint64_t skipped) {
  if (to) to->visited += visited, to->skipped += skipped;
}

// Which (query, key) pairs are visible, by global position: causal keeps key position <= query
// position (with the blocks' offsets, so the block may be a diagonal, a full or an empty square);
// full keeps every pair (a key block wholly before the query block); none keeps nothing.
enum class AttentionMask { causal, full, none };

struct AttentionBlock {
  int B, Tq, Tk, H, Hkv, D;
  long q_batch, q_row;
  long kv_batch, kv_row;
  long o_batch, o_row;
  long l_batch, l_head;
  int q_pos, k_pos;  // global positions of the first query and the first key
  AttentionMask mask;
  // Optional document ids, q_doc[b * q_doc_batch + i] and k_doc[b * k_doc_batch + j], monotone
  // along the sequence (ids compare across the two blocks). Null: no document mask.
  const int32_t* q_doc = nullptr;
  const int32_t* k_doc = nullptr;
  long q_doc_batch = 0, k_doc_batch = 0;
  AttentionTileCounts* tiles = nullptr;  // where a document-masked call counts its tiles; may be null
};

// A block over contiguous (B, T, heads, D) buffers with no padding between heads: the strides a
// caller of the plain kernels would use (row strides q_row / kv_row given).
AttentionBlock contiguous_block(int B, int Tq, int Tk, int H, int Hkv, int D, long q_row, long kv_row);

// Keys [0, end) of the block are visible to its query row i (0 <= end <= Tk) by the mask.
int attention_block_key_end(const AttentionBlock& s, int i);
// The first key of sequence b that row i's document reaches: 0 without document ids, else the first
// key whose id is not below the query's (the keys before belong to earlier documents).
int attention_block_key_begin(const AttentionBlock& s, int b, int i);
// Throws std::invalid_argument naming the bad dimension.
void check_attention_block(const AttentionBlock& s);

// Visible (query, key) pairs of one head's block by the mask alone (documents not counted: the
// FLOPs a caller reports are those of the causal attention); a fully masked query row counts nothing.
uint64_t visible_pairs(const AttentionBlock& s);
// Floating-point operations of the block's forward (QK^T and PV over visible pairs, 4 D each,
// every query head) and of its backward (five such products: 10 D).
double block_forward_flops(const AttentionBlock& s);
double block_backward_flops(const AttentionBlock& s);

// out, lse of the block (overwritten). A query row that sees no key gets out = 0, lse = -inf.
// Returns the FLOPs done, block_forward_flops(s): the caller keeps its own count of the work (a
// context-parallel rank shows its share of the attention that way), the kernel keeps none.
double attention_block_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                               const AttentionBlock& s);
double attention_block_forward(double* out, double* lse, const double* q, const double* k, const double* v,
                               const AttentionBlock& s);

// Merges a partial result into an accumulated one, both laid out as s's out/lse (the part may
// use its own strides: p_*), in fp32 (double for the twin): lse' = log(e^lse + e^lse_p),
// out' = out e^(lse - lse') + out_p e^(lse_p - lse'). Rows with lse = -inf are empty.
struct MergeLayout {
  int B, T, H, D;
  long o_batch, o_row, l_batch, l_head;
};
void attention_merge(float* out, float* lse, const MergeLayout& acc, const float* out_p, const float* lse_p,
                     const MergeLayout& part);
void attention_merge(double* out, double* lse, const MergeLayout& acc, const double* out_p,
                     const double* lse_p, const MergeLayout& part);

// Accumulates the block's share into dq, dk, dv (q/k/v strides). out and lse are the merged
// output and log-sum-exp of the whole rows (out strides o_*, lse strides l_*); dout has out's
// layout. Returns the FLOPs done: block_backward_flops(s), 0 for a block masked out (none).
double attention_block_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                                const float* k, const float* v, const float* out, const float* lse,
                                const AttentionBlock& s);
double attention_block_backward(double* dq, double* dk, double* dv, const double* dout, const double* q,
                                const double* k, const double* v, const double* out, const double* lse,
                                const AttentionBlock& s);

}  // namespace ff
