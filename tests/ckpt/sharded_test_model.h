#pragma once
// A synthetic model for the sharded checkpoint tests, and the ways parallel layouts hold it,
// simulated in one process: each "rank" lists the regions it holds (a whole tensor, a tp block, a
// ZeRO chunk of the flat layout that cuts rows, a ZeRO chunk of a tp block). Element values are
// distinct bit patterns computed from (tensor, index), so a misplaced element cannot go unseen.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ckpt/sharded.h"

namespace ff::testing {

enum class TpSplit { rows, cols, replicated };

struct SynthTensor {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype;
  TpSplit tp;  // how Megatron-style tp would split it
};

// 1-D tensors are (1 x n) boxes; shapes are uneven so every split leaves ragged blocks.
inline const std::vector<SynthTensor>& synth_tensors() {
  static const std::vector<SynthTensor> t = {
      {"embed", {10, 6}, DType::f32, TpSplit::rows},
      {"layer.wq", {6, 6}, DType::f32, TpSplit::rows},
      {"layer.norm", {6}, DType::f32, TpSplit::replicated},
      {"layer.w1", {9, 6}, DType::f32, TpSplit::rows},
      {"layer.w2", {6, 9}, DType::f32, TpSplit::cols},
      {"final_norm", {7}, DType::f32, TpSplit::replicated},
      {"head_bf16", {7, 6}, DType::bf16, TpSplit::rows}};
  return t;
}

inline int64_t numel_of(const SynthTensor& t) { return full_box(t.shape).numel(); }

// Element i (row-major) of tensor t: finite, distinct across the whole model.
inline void synth_element(size_t t, int64_t i, unsigned char* dst) {
  if (synth_tensors()[t].dtype == DType::f32) {
    const uint32_t bits = 0x40000000u | uint32_t(t) << 16 | uint32_t(i);
    std::memcpy(dst, &bits, 4);
  } else {
    const uint16_t bits = uint16_t(0x3c00u + (t << 7) + uint32_t(i));
    std::memcpy(dst, &bits, 2);
  }
}

// Part k of n near-equal parts of [0, count), the first count % n parts one longer.
inline std::pair<int64_t, int64_t> part(int64_t count, int n, int k) {
  const int64_t base = count / n, extra = count % n;
  const int64_t b = k * base + std::min<int64_t>(k, extra);
  return {b, b + base + (k < extra ? 1 : 0)};
}

// Elements [begin, end) of box's row-major order of one tensor; saves is false on the replicas
// that a save leaves out (each element is saved by exactly one rank).
struct Holding {
  size_t tensor;
  Box box;
  int64_t begin, end;
  bool saves;
};

enum class Layout { whole, tp_rows, tp_cols, zero, zero_of_tp };

inline const char* layout_name(Layout l) {
  static const char* n[] = {"whole tensors (pp-like)", "tp row blocks", "tp column blocks",
                            "ZeRO flat chunks", "ZeRO chunks of tp 2 blocks"};
  return n[int(l)];
}

inline Box tp_block(const SynthTensor& t, TpSplit split, int tp, int k) {
  const Box full = full_box(t.shape);
  if (split == TpSplit::replicated) return full;
  if (split == TpSplit::rows) {
    auto [a, b] = part(full.rows(), tp, k);
    return {a, b, 0, full.cols()};
  }
  auto [a, b] = part(full.cols(), tp, k);
  return {0, full.rows(), a, b};
}

// The flat layout of boxes (one per tensor, back to back), chunked over ranks.
inline std::vector<Holding> flat_chunk(const std::vector<Box>& boxes, const std::vector<bool>& saves,
                                       int ranks, int rank) {
  int64_t total = 0;
  for (const Box& b : boxes) total += b.numel();
  auto [a, z] = part(total, ranks, rank);
  std::vector<Holding> out;
  int64_t at = 0;
  for (size_t t = 0; t < boxes.size(); ++t) {
    const int64_t b0 = std::max(a, at), b1 = std::min(z, at + boxes[t].numel());
    if (b1 > b0) out.push_back({t, boxes[t], b0 - at, b1 - at, saves[t]});
    at += boxes[t].numel();
  }
  return out;
}

inline std::vector<Holding> holdings(Layout l, int rank, int ranks) {
  const auto& ts = synth_tensors();
  std::vector<Holding> out;
  if (l == Layout::whole) {
    for (size_t t = 0; t < ts.size(); ++t)
      if (int(t % size_t(ranks)) == rank) out.push_back({t, full_box(ts[t].shape), 0, numel_of(ts[t]), true});
  } else if (l == Layout::tp_rows || l == Layout::tp_cols) {
    for (size_t t = 0; t < ts.size(); ++t) {
      const TpSplit s = ts[t].tp == TpSplit::replicated ? TpSplit::replicated
                        : l == Layout::tp_rows           ? TpSplit::rows
                                                         : TpSplit::cols;
      const Box b = tp_block(ts[t], s, ranks, rank);
      out.push_back({t, b, 0, b.numel(), s != TpSplit::replicated || rank == 0});
    }
  } else if (l == Layout::zero) {
    std::vector<Box> boxes;
    for (const auto& t : ts) boxes.push_back(full_box(t.shape));
    out = flat_chunk(boxes, std::vector<bool>(ts.size(), true), ranks, rank);
  } else {
    const int tp = 2, dp = ranks / 2, tp_rank = rank % 2, dp_rank = rank / 2;
    std::vector<Box> boxes;
    std::vector<bool> saves;
    for (const auto& t : ts) {
      boxes.push_back(tp_block(t, t.tp, tp, tp_rank));
      saves.push_back(t.tp != TpSplit::replicated || tp_rank == 0);
    }
    out = flat_chunk(boxes, saves, dp, dp_rank);
  }
  return out;
}

// The bytes of a holding, as the rank would have them in memory.
inline std::vector<unsigned char> holding_bytes(const Holding& h) {
  const SynthTensor& t = synth_tensors()[h.tensor];
  const size_t es = dtype_size(t.dtype);
  const int64_t cols = full_box(t.shape).cols();
  std::vector<unsigned char> out(size_t(h.end - h.begin) * es);
  for (int64_t k = h.begin; k < h.end; ++k) {
    const int64_t r = h.box.r0 + k / h.box.cols(), c = h.box.c0 + k % h.box.cols();
    synth_element(h.tensor, r * cols + c, out.data() + size_t(k - h.begin) * es);
  }
  return out;
}

// Every rank writes its file; the records travel as strings (as through one gather) to the
// manifest; then `latest` moves. Returns the step folder.
inline std::string save_synth(const std::string& run_dir, int64_t step, Layout l, int ranks,
                              ShardWriterOptions opt = {}, int keep = 2) {
  const std::string dir = prepare_step_dir(run_dir, step);
  std::vector<std::string> gathered;
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::vector<unsigned char>> staged;  // alive until write() returns
    ShardWriter w(r, step, opt);
    for (const Holding& h : holdings(l, r, ranks)) {
      if (!h.saves) continue;
      const SynthTensor& t = synth_tensors()[h.tensor];
      staged.push_back(holding_bytes(h));
      w.add_flat(t.name, t.shape, h.box, h.begin, h.end, ConstTypedPtr(staged.back().data(), t.dtype));
    }
    gathered.push_back(encode_shard_record(w.write(dir)));
  }
  std::vector<ShardFileRecord> records;
  for (const auto& s : gathered) records.push_back(decode_shard_record(s));
  CheckpointInfo info;
  info.step = step;
  info.config = {{"dim", 6}, {"layers", 1}};
  info.layout = {{"layout", layout_name(l)}, {"ranks", ranks}};
  info.state = {{"data_position", {{"epoch", 0}, {"cursor", step * 8}}}, {"rng", "seed-1234"}};
  write_manifest(dir, info, std::move(records));
  publish_checkpoint(run_dir, step, keep);
  return dir;
}

// Loads what rank `rank` of `ranks` holds under l and checks every element bit for bit. Marks
// the elements it checked in seen (per tensor), so callers can assert full coverage.
inline void load_and_check(ShardedCheckpointReader& reader, Layout l, int rank, int ranks,
                           std::vector<std::vector<bool>>* seen = nullptr) {
  const auto hs = holdings(l, rank, ranks);
  std::vector<std::vector<unsigned char>> dst;
  std::vector<ReadRequest> reqs;
  for (const Holding& h : hs) {
    const SynthTensor& t = synth_tensors()[h.tensor];
    dst.emplace_back(size_t(h.end - h.begin) * dtype_size(t.dtype), 0xEE);
    for (auto& q : flat_read_requests(t.name, h.box, h.begin, h.end, TypedPtr(dst.back().data(), t.dtype)))
      reqs.push_back(std::move(q));
  }
  reader.read(reqs);
  for (size_t i = 0; i < hs.size(); ++i) {
    const Holding& h = hs[i];
    EXPECT_EQ(dst[i], holding_bytes(h)) << synth_tensors()[h.tensor].name << " " << describe(h.box)
                                        << " [" << h.begin << ", " << h.end << ")";
    if (!seen) continue;
    auto& s = (*seen)[h.tensor];
    const int64_t cols = full_box(synth_tensors()[h.tensor].shape).cols();
    for (int64_t k = h.begin; k < h.end; ++k)
      s[size_t((h.box.r0 + k / h.box.cols()) * cols + h.box.c0 + k % h.box.cols())] = true;
  }
}

}  // namespace ff::testing
