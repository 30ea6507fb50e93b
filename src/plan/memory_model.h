#pragma once
// Per-rank memory of a training run, predicted from the config and the layout before anything is
// allocated, by category as the MemoryLedger counts it. It mirrors the engine's allocations (the
// same ParamLayout, shard chunks, activation arenas, pipeline stashes and scratch buffers), so a
// test can hold it to the ledger's measured peaks; paper_formulas.h has the published closed forms.
#include <array>
#include <cstdint>
#include <string>

#include "core/memory.h"
#include "model/model_config.h"
#include "plan/engine_host.h"
#include "plan/layout_spec.h"

namespace ff {

struct RankMemory {
  std::array<int64_t, kMemCategories> bytes{};  // indexed by MemCategory
  int pp_rank = 0;                              // the pipeline rank this is (the largest one's)
  // Checkpoints: sharded ones never assemble the state; a resume stages its reads through one
  // block buffer (the checkpoint reader's staging, io/file_reader.h), alive beside the state while it loads.
  // (ckpt_async's staging copy of the rank's pieces is not modelled.)
  int64_t checkpoint_bytes = 0;
  int64_t total() const;                                  // the ledger's categories
  int64_t peak() const { return total() + checkpoint_bytes; }  // what must fit
  int64_t operator[](MemCategory c) const { return bytes[size_t(c)]; }
  // "params 1.2 GiB, grads ..., checkpoint ..., total ..." on one line (total = peak()).
  std::string describe() const;
};

// One pipeline rank's bytes (tp rank 0 and data-parallel rank 0, which hold the largest shards) on
// `host` (its threads size the kernels' per-thread scratch; its 16-bit GEMM path, the packed weight
// copies or the widened operands): this_engine_host() for this machine.
RankMemory estimate_rank_memory(const ModelConfig& c, const LayoutSpec& L, int pp_rank, const EngineHost& host);
// The largest of the pipeline ranks: what must fit on every rank.
RankMemory estimate_peak_memory(const ModelConfig& c, const LayoutSpec& L, const EngineHost& host);

}  // namespace ff
