#include "io/tokens/mixture_loader.h"

#include <stdexcept>
#include <string>

namespace ff {

namespace {

std::vector<double> weights_of(const std::vector<MixtureSource>& sources) {
  std::vector<double> w;
  for (const auto& s : sources) w.push_back(s.weight);
  return w;
}

}  // namespace

uint64_t mixture_source_seed(uint64_t seed, size_t source) {
  // The golden-ratio step keeps the sources' seeds apart for any run seed.
  return seed + uint64_t(source) * 0x9E3779B97F4A7C15ull;
}

MixtureLoader::MixtureLoader(const std::vector<MixtureSource>& sources, int seq_len, uint64_t seed)
    : schedule_(sources.empty() ? std::vector<double>{} : weights_of(sources)) {
  for (size_t i = 0; i < sources.size(); ++i) {
    loaders_.emplace_back(sources[i].tokens, seq_len, mixture_source_seed(seed, i));
    epoch_rows_ += loaders_.back().windows_per_epoch();
  }
}

uint64_t MixtureLoader::next_batch(int n, int offset, int count, int32_t* inputs, int32_t* targets) {
  if (n <= 0 || offset < 0 || count < 0 || offset + int64_t(count) > n) {
    throw std::runtime_error("MixtureLoader::next_batch: rows [" + std::to_string(offset) + ", " +
                             std::to_string(int64_t(offset) + count) + ") do not lie inside a global batch of " +
                             std::to_string(n) + "; each rank must read a slice of [0, n) with n > 0");
  }
  const size_t T = size_t(loaders_.front().seq_len());
  uint64_t targets_in_batch = 0;
  // Every rank draws every row of the batch, so all agree on each source's count.
  for (int r = 0; r < n; ++r) {
    const size_t s = schedule_.next();
    const bool mine = r >= offset && r < offset + count;
    const size_t at = size_t(r - offset) * T;
    targets_in_batch += loaders_[s].read_sequence(schedule_.counts()[s] - 1, mine ? inputs + at : nullptr,
                                                  mine ? targets + at : nullptr);
  }
  return targets_in_batch;
}

DataLoader::Position MixtureLoader::position() const {
  return {schedule_.drawn() / epoch_rows_, schedule_.drawn() % epoch_rows_};
}

void MixtureLoader::set_position(DataLoader::Position p) {
  if (p.cursor >= epoch_rows_) {
    throw std::runtime_error("data position: cursor " + std::to_string(p.cursor) + " is past the " +
                             std::to_string(epoch_rows_) +
                             " windows of an epoch; the checkpoint was saved with different data or seq_len, so "
                             "resume with the same data settings");
  }
  schedule_.reset(p.epoch * epoch_rows_ + p.cursor);
}

}  // namespace ff
