#pragma once
// Mean loss of a model over a token stream: every non-overlapping window of seq_len + 1 tokens,
// in order (no shuffling), so the number is comparable across runs and layouts.
#include <cstdint>
#include <vector>

#include "model/llama.h"

namespace ff {

struct EvalResult {
  double mean_loss;
  int64_t tokens;
};

EvalResult evaluate_stream(Llama& model, const float* params, const std::vector<int32_t>& tokens,
                           int batch, int64_t max_windows = 0);

}  // namespace ff
