#pragma once
// Mean loss of a model over a token stream: every non-overlapping window of seq_len + 1 tokens,
// in order (no shuffling), so the number is comparable across runs and layouts. A stream with a
// loss mask (fine-tuning data) averages over its loss targets alone.
#include <cstdint>
#include <string>

#include "io/tokens/token_stream.h"
#include "model/llama.h"

namespace ff {

struct EvalResult {
  double mean_loss;
  int64_t tokens;  // the loss targets averaged over: every window token without a loss mask
};

EvalResult evaluate_stream(Llama& model, const float* params, const TokenStream& tokens, int batch,
                           int64_t max_windows = 0);

// The same windows' logits, (windows, seq_len, vocab_size) float32, written to `path` as .npy (for
// comparing with another implementation position by position). Returns the number of windows.
int64_t write_window_logits(Llama& model, const float* params, const TokenStream& tokens, int batch,
                            int64_t max_windows, const std::string& path);

}  // namespace ff
