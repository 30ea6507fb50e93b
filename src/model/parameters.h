#pragma once
// All parameters live in one flat fp32 buffer; each tensor is a named view (offset + shape) into
// it (llm.c's malloc_and_point_parameters). Gradients and optimizer moments use the same layout,
// so the optimizer, clipping, checkpoints and (later) ZeRO sharding are loops over one span.
//
// Order within a block is q, k, v (then their biases, where the model has them) then gate, up: stored (out, in) row-major, consecutive q/k/v
// rows form the fused (H+2Hkv)*D x C matrix, and gate/up the fused 2F x C one, so each block runs
// two GEMMs where a naive port runs five.
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/param_access.h"

namespace ff {

// The part of a tensor one rank holds under a parallel plan: a block of rows or columns of the
// full tensor (Megatron's column and row splits cut matrices along one axis only).
struct TensorSlice {
  std::vector<int64_t> shape;  // local shape
  int64_t row0 = 0, col0 = 0;  // where the local block starts in the full tensor
  int replicas = 1;            // tensor-parallel ranks holding this same block (norms: all)
};

// How a parallel plan cuts each tensor (principle 6, docs/principles.md); the model only sees the
// result.
class TensorSlicer {
 public:
  virtual ~TensorSlicer() = default;
  virtual TensorSlice slice(const std::string& name, const std::vector<int64_t>& full_shape) const = 0;
};

struct ParamView {
  std::string name;            // Hugging Face LlamaForCausalLM name
  std::vector<int64_t> shape;  // (out, in) for matrices; this rank's block under a plan
  size_t offset = 0;           // in elements, into the flat buffer
  size_t numel = 0;
  bool is_matrix = false;      // matrices get weight decay and normal init; norms and biases neither
  std::vector<int64_t> full_shape;  // the unsharded tensor (= shape without a plan)
  int64_t row0 = 0, col0 = 0;       // this block's origin in the full tensor
  int replicas = 1;                 // tensor-parallel ranks holding the same block

  // Flat index into the full tensor of element i of this block.
  size_t full_index(size_t i) const;
};

// What a decoder block's MLP is: dense (gate/up/down), or a mixture of experts (a router, routed
// experts whose parameters form a segment of their own in the expert group, and optional shared
// experts). Each layer may be either (MoeConfig::moe_layers).
enum class BlockKind { dense, moe };

// Offsets of a dense MLP's tensors relative to the start of its block's segment.
struct DenseMlpOffsets {
  size_t gate_up = 0, down = 0;  // fused (2F, C) gate and up, then (C, F) down
};

// Offsets of an MoE block's dense-group tensors relative to the start of its block segment; the
// routed experts live in the layer's expert segment, expert e (of this rank's) at
// e * expert_stride: fused (2Fe, C) w1/w3, then (C, Fe) w2.
struct MoeMlpOffsets {
  size_t router = 0;                       // (E, C) block_sparse_moe.gate
  size_t shared_gate_up = 0, shared_down = 0;  // (2Fs, C), (C, Fs); Fs = shared_experts * Fe
  size_t expert_stride = 0;                // 3 * Fe * C
};

// Offsets of one block's tensors relative to the start of its segment. Kept per block: blocks of
// different kinds (and, later, MoE blocks of different expert counts) have different layouts.
struct BlockOffsets {
  BlockKind kind = BlockKind::dense;
  size_t attn_norm = 0, qkv = 0, o = 0, mlp_norm = 0;
  size_t qkv_bias = 0;  // the fused (Q) q/k/v bias, right after v's weight (ModelConfig::qkv_bias)
  DenseMlpOffsets mlp;  // kind == dense
  MoeMlpOffsets moe;    // kind == moe
};

// The parts of the model one pipeline stage holds: some decoder blocks, and the embedding (first
// stage) or the final norm and LM head (last stage). A tied head brings the embedding along: the
// last stage keeps its own copy of it, after the head.
struct ModelParts {
  std::vector<int> layers;  // ascending global layer indices
  bool embedding = true;
  bool head = true;
  // The routed experts this rank holds in every MoE block: [expert_first, expert_first +
  // expert_count) of n_experts (expert parallelism); -1 = all of them.
  int expert_first = 0, expert_count = -1;
  static ModelParts all(const ModelConfig& c);
};

class ParamLayout {
 public:
  // slicer: this rank's part of each tensor under a tensor-parallel plan; null = whole tensors.
  // parts: the pipeline stage's share of the model; null = all of it. Tensor names (and so
  // checkpoints) stay those of the whole model.
  explicit ParamLayout(const ModelConfig& c, const TensorSlicer* slicer = nullptr,
                       const ModelParts* parts = nullptr);
  const std::vector<ParamView>& views() const { return views_; }
  size_t total() const { return total_; }
  const ParamView& find(const std::string& name) const;  // throws naming the missing tensor
  // The segments this layout holds, in layout order (embedding, blocks ascending, head), with a
  // name each ("embedding", "block 3", "head"); backward completes them in reverse.
  const std::vector<ParamSegment>& segments() const { return segments_; }
  const std::string& segment_name(size_t i) const { return segment_names_[i]; }
  // Absent parts have count 0 (block_segment of a layer another stage holds, say).
  ParamSegment embedding_segment() const { return embedding_; }
  ParamSegment block_segment(int layer) const { return blocks_[size_t(layer)]; }
  // The final norm, then (untied) the LM head at offset dim within the segment.
  ParamSegment head_segment() const { return head_; }
  // Block `layer`'s kind and tensor offsets (a layer this layout holds).
  const BlockOffsets& block_offsets(int layer) const { return block_offsets_[size_t(layer)]; }
  BlockKind block_kind(int layer) const { return block_offsets(layer).kind; }
  // An MoE block's routed experts (this rank's), a segment of the expert group right above the
  // block's own segment; count 0 for a dense block.
  ParamSegment expert_segment(int layer) const { return experts_[size_t(layer)]; }
  int expert_first() const { return expert_first_; }  // global index of this rank's first expert
  int local_experts() const { return local_experts_; }
  // The parameter group segment i belongs to (ModelState reduces and shards each group over its
  // own communicator). Every segment is dense until MoE blocks bring expert segments.
  ParamGroupKind segment_group(size_t i) const { return segment_groups_[i]; }
  int n_blocks() const { return int(blocks_.size()); }

 private:
  std::vector<ParamView> views_;
  std::vector<ParamSegment> blocks_;  // by global layer; count 0 where absent
  std::vector<ParamSegment> experts_;  // by global layer; count 0 for dense or absent blocks
  int expert_first_ = 0, local_experts_ = 0;
  std::vector<ParamSegment> segments_;
  std::vector<std::string> segment_names_;
  std::vector<ParamGroupKind> segment_groups_;
  std::vector<BlockOffsets> block_offsets_;  // by global layer; meaningful where present
  ParamSegment embedding_, head_;
  size_t total_ = 0;
};

// Element i of tensor `name` (i indexing the full tensor) is init_std * normal(seed, hash(name), i)
// for matrices (output
// projections o and down scaled by 1/sqrt(2*n_layers), as GPT-2 does to keep the residual stream's
// variance flat in depth), 1 for norms and 0 for biases. Writes params[view.offset + i] for i in [begin, end)
// of each view, so a shard (ZeRO's range of the flat buffer, tensor parallelism's block of each
// tensor, or both) initialises just what it holds, to the values the serial model has there.
// A bias vector (HF's "<module>.bias"): initialised to 0, never decayed.
bool is_bias(const std::string& name);

void init_parameters(float* params, const ParamLayout& layout, const ModelConfig& c,
                     uint64_t seed);
// The same values for flat elements [begin, end) only, written to dst[0 .. end - begin).
void init_parameter_range(float* dst, size_t begin, size_t end, const ParamLayout& layout,
                          const ModelConfig& c, uint64_t seed);

}  // namespace ff
