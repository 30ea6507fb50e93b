#pragma once
// Batches drawn from several token streams by weight (`data = ["code:0.3", "web:0.7"]`). Row g of
// the run (g counts every row of every global batch since the start) comes from the source the
// MixtureSchedule picks for g; within a source, rows follow that source's own DataLoader order,
// seeded by (seed, source index), so each source is shuffled and visited once per its own epoch.
//
// The whole state is g, kept in the DataLoader::Position a checkpoint already saves: the mixture's
// "epoch" is the sum of the sources' windows, position = {g / sum, g % sum}. With one source that
// is that source's DataLoader exactly (source 0 keeps the run's seed), so a one-folder run reads
// and saves what a plain DataLoader does.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "io/tokens/data_loader.h"
#include "io/tokens/mixture_schedule.h"
#include "io/tokens/token_stream.h"

namespace ff {

struct MixtureSource {
  std::shared_ptr<const TokenStream> tokens;
  double weight = 1;
};

class MixtureLoader {
 public:
  MixtureLoader(const std::vector<MixtureSource>& sources, int seq_len, uint64_t seed);

  // As DataLoader::next_batch: rows [offset, offset + count) of the next global batch of n rows,
  // then advance by n; returns the loss-target count of all n rows.
  uint64_t next_batch(int n, int offset, int count, int32_t* inputs, int32_t* targets);
  DataLoader::Position position() const;
  void set_position(DataLoader::Position p);
  // The mixture's epoch: every source's windows once (a source's own epochs follow its weight).
  uint64_t windows_per_epoch() const { return epoch_rows_; }
  // Rows drawn from each source so far (the realised proportions).
  const std::vector<uint64_t>& rows_per_source() const { return schedule_.counts(); }
  const std::vector<double>& weights() const { return schedule_.weights(); }
  const DataLoader& source(size_t i) const { return loaders_[i]; }

 private:
  std::vector<DataLoader> loaders_;
  MixtureSchedule schedule_;
  uint64_t epoch_rows_ = 0;
};

// The seed of source i's window order: the run's seed for source 0.
uint64_t mixture_source_seed(uint64_t seed, size_t source);

}  // namespace ff
