#pragma once
// Tests that start a model state from chosen values (not from the seeded init) fill it the way a
// resume does: every run of the flat layout this rank holds (its ZeRO chunks, its group's
// segments, or everything when replicated) copied from whole-model arrays, then after_load()
// (collective where the state communicates), which refreshes what depends on the parameters:
// ZeRO-3's gathered copies, a local-SGD round's starting point.
#include <algorithm>
#include <vector>

#include "parallel/model_state.h"

namespace ff::testkit {

// p, m, v: the whole model's parameters and AdamW moments in its flat layout.
inline void fill_state(ModelState& state, const float* p, const float* m, const float* v) {
  const StateRuns runs = state.checkpoint_runs(false);
  auto fill = [](const std::vector<StateRun>& to, const float* from) {
    for (const StateRun& r : to) std::copy(from + r.flat, from + r.flat + r.count, r.data);
  };
  fill(runs.params, p);
  fill(runs.m, m);
  fill(runs.v, v);
  state.after_load();
}

}  // namespace ff::testkit
