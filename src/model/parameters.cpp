#include "model/parameters.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/rng.h"

namespace ff {

size_t ParamView::full_index(size_t i) const {
  if (shape.size() < 2) return size_t(row0) + i;
  const size_t cols = size_t(shape[1]);
  return (size_t(row0) + i / cols) * size_t(full_shape[1]) + size_t(col0) + i % cols;
}

ModelParts ModelParts::all(const ModelConfig& c) {
  ModelParts p;
  for (int l = 0; l < c.n_layers; ++l) p.layers.push_back(l);
  return p;
}

ParamLayout::ParamLayout(const ModelConfig& c, const TensorSlicer* slicer, const ModelParts* parts) {
  const ModelParts whole = ModelParts::all(c);
  if (!parts) parts = &whole;
  const int64_t C = c.dim, D = c.head_dim(), F = c.ffn_dim, V = c.vocab_size;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    ParamView v;
    v.name = std::move(name);
    v.full_shape = shape;
    if (slicer) {
      TensorSlice s = slicer->slice(v.name, shape);
      shape = std::move(s.shape);
      v.row0 = s.row0, v.col0 = s.col0, v.replicas = s.replicas;
    }
    v.shape = std::move(shape);
    v.numel = 1;
    for (auto s : v.shape) v.numel *= size_t(s);
    v.is_matrix = v.shape.size() == 2;
    v.offset = total_;
    total_ += v.numel;
    views_.push_back(v);
    return views_.back().offset;
  };
  auto segment = [&](ParamSegment seg, std::string name, ParamGroupKind group = ParamGroupKind::dense) {
    segments_.push_back(seg);
    segment_names_.push_back(std::move(name));
    segment_groups_.push_back(group);
    return seg;
  };
  auto add_embedding = [&] {
    const size_t emb = add("model.embed_tokens.weight", {V, C});
    embedding_ = segment({emb, total_ - emb}, "embedding");
  };
  if (parts->embedding) add_embedding();
  blocks_.assign(size_t(c.n_layers), ParamSegment{});
  block_offsets_.assign(size_t(c.n_layers), BlockOffsets{});
  experts_.assign(size_t(c.n_layers), ParamSegment{});
  const int E = c.moe.n_experts;
  expert_first_ = parts->expert_count < 0 ? 0 : parts->expert_first;
  local_experts_ = parts->expert_count < 0 ? E : parts->expert_count;
  for (int l : parts->layers) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    const size_t start = total_;
    BlockOffsets b;
    b.kind = BlockKind::dense;
    b.attn_norm = add(p + "input_layernorm.weight", {C}) - start;
    b.qkv = add(p + "self_attn.q_proj.weight", {c.n_heads * D, C}) - start;
    add(p + "self_attn.k_proj.weight", {c.n_kv_heads * D, C});
    add(p + "self_attn.v_proj.weight", {c.n_kv_heads * D, C});
    if (c.qkv_bias) {  // adjacent, so they form one bias of the fused q/k/v GEMM's width
      b.qkv_bias = add(p + "self_attn.q_proj.bias", {c.n_heads * D}) - start;
      add(p + "self_attn.k_proj.bias", {c.n_kv_heads * D});
      add(p + "self_attn.v_proj.bias", {c.n_kv_heads * D});
    }
    b.o = add(p + "self_attn.o_proj.weight", {C, c.n_heads * D}) - start;
    b.mlp_norm = add(p + "post_attention_layernorm.weight", {C}) - start;
    if (c.moe.is_moe_layer(l, c.n_layers)) {
      const int64_t Fe = c.moe.expert_width(c.ffn_dim), Fs = int64_t(c.moe.shared_experts) * Fe;
      b.kind = BlockKind::moe;
      b.moe.router = add(p + "block_sparse_moe.gate.weight", {E, C}) - start;
      if (Fs > 0) {
        b.moe.shared_gate_up = add(p + "block_sparse_moe.shared_expert.gate_proj.weight", {Fs, C}) - start;
        add(p + "block_sparse_moe.shared_expert.up_proj.weight", {Fs, C});
        b.moe.shared_down = add(p + "block_sparse_moe.shared_expert.down_proj.weight", {C, Fs}) - start;
      }
      b.moe.expert_stride = size_t(3 * Fe * C);
    } else {
      b.mlp.gate_up = add(p + "mlp.gate_proj.weight", {F, C}) - start;
      add(p + "mlp.up_proj.weight", {F, C});
      b.mlp.down = add(p + "mlp.down_proj.weight", {C, F}) - start;
    }
    block_offsets_[size_t(l)] = b;
    blocks_[size_t(l)] = segment({start, total_ - start}, "block " + std::to_string(l));
    if (b.kind == BlockKind::moe) {
      // The routed experts in Mixtral's names, w1/w3 adjacent so each expert runs one gate/up GEMM.
      const int64_t Fe = c.moe.expert_width(c.ffn_dim);
      const size_t first = total_;
      for (int e = expert_first_; e < expert_first_ + local_experts_; ++e) {
        const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
        add(x + "w1.weight", {Fe, C});
        add(x + "w3.weight", {Fe, C});
        add(x + "w2.weight", {C, Fe});
      }
      experts_[size_t(l)] = segment({first, total_ - first}, "experts " + std::to_string(l), ParamGroupKind::expert);
    }
  }
  if (parts->head) {
    head_.offset = add("model.norm.weight", {C});
    if (!c.tied_embeddings) add("lm_head.weight", {V, C});
    head_.count = total_ - head_.offset;
    segment(head_, "head");
    // A last pipeline stage's own copy of a tied embedding goes above the head: backward
    // finishes it with the head, and segments must complete from the top of the layout down.
    if (c.tied_embeddings && !parts->embedding) add_embedding();
  }
}

const ParamView& ParamLayout::find(const std::string& name) const {
  for (const auto& v : views_)
    if (v.name == name) return v;
  throw std::runtime_error("no parameter named '" + name + "' in this model");
}

bool is_bias(const std::string& name) {
  return name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
}

static bool is_residual_output(const std::string& name) {
  return name.find("o_proj") != std::string::npos || name.find("down_proj") != std::string::npos ||
         name.find(".w2.") != std::string::npos;  // an expert's down projection
}

void init_parameter_range(float* dst, size_t begin, size_t end, const ParamLayout& layout,
                          const ModelConfig& c, uint64_t seed) {
  for (const auto& v : layout.views()) {
    const size_t lo = std::max(begin, v.offset), hi = std::min(end, v.offset + v.numel);
    if (lo >= hi) continue;
    float* p = dst + (lo - begin);
    if (!v.is_matrix) {
      std::fill(p, p + (hi - lo), is_bias(v.name) ? 0.0f : 1.0f);
      continue;
    }
    float std = c.init_std;
    if (is_residual_output(v.name)) std /= std::sqrt(2.0f * c.n_layers);
    const uint64_t stream = stable_hash(v.name);
    const size_t first = lo - v.offset, n = hi - lo;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) p[i] = std * normal01(seed, stream, v.full_index(first + i));
  }
}

void init_parameters(float* params, const ParamLayout& layout, const ModelConfig& c,
                     uint64_t seed) {
  init_parameter_range(params, 0, layout.total(), layout, c, seed);
}

}  // namespace ff
