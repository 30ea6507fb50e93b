#pragma once
// What the end-to-end parallel tests share: the `tiny` training config they start from, and the
// comparison of a parallel run with the serial run it must reproduce.
#include <algorithm>
#include <initializer_list>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "core/memory.h"
#include "io/tokens/data_folder.h"
#include "io/tokens/token_shard.h"
#include "io/tokenizer/tokenizer.h"
#include "test_data.h"
#include "train/trainer.h"

namespace ff::testkit {

// The document-mask variant of a layout test: CTest sets FF_TEST_DOC_MASK=1 on a second
// registration of the same program, which then runs every case (parallel and serial alike) with
// doc_mask = true on rows long enough to hold several documents.
inline bool doc_mask_variant() {
  const char* v = std::getenv("FF_TEST_DOC_MASK");
  return v && std::string(v) == "1";
}
constexpr int kDocMaskSeqLen = 128;  // two 64-row attention tiles: boundaries inside them and across

// The fewest documents any window of T tokens of the data's training shard holds (a document
// starts at a BOS, or after an EOS), counted here from the tokens without the model's code.
inline int fewest_documents_per_window(const std::string& data, int T) {
  const auto tok = open_tokenizer(tokenizer_file_in(data));
  std::vector<int32_t> ids;
  for (const std::string& shard : data_folder_shards(data).train) {
    const std::vector<int32_t> part = read_token_shard(shard);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  const int bos = tok->bos_id(), eos = tok->eos_id();
  std::vector<int> starts(ids.size() + 1, 0);  // starts[i]: document starts at positions < i
  for (size_t t = 0; t < ids.size(); ++t)
    starts[t + 1] = starts[t] + int(t > 0 && (ids[t] == bos || ids[t - 1] == eos));
  int fewest = std::numeric_limits<int>::max();
  for (size_t o = 0; o + size_t(T) <= ids.size(); ++o)  // the window's first token always starts one
    fewest = std::min(fewest, 1 + starts[o + size_t(T)] - starts[o + 1]);
  return fewest;
}

// The open-model variant of a layout test: CTest sets FF_TEST_OPEN_MODEL=1 on a second
// registration, which then runs every case with what current open checkpoints have and Llama 2
// lacks: Qwen2's q/k/v bias, a head_dim other than dim / n_heads (24 x 4 heads over dim 64), Llama
// 3.1's RoPE scaling with pairs in each of its three regions (wavelengths against 64 / 4 and 64 / 1)
// and a tied head.
inline bool open_model_variant() {
  const char* v = std::getenv("FF_TEST_OPEN_MODEL");
  return v && std::string(v) == "1";
}

inline void set_open_model_shape(ModelConfig& m) {
  m.qkv_bias = true;
  m.head_size = 24;
  m.rope_scaling = {RopeScalingKind::llama3, 8.0f, 1.0f, 4.0f, 64};
  m.tied_embeddings = true;
}

// configs/tiny.toml on `data`: 20 steps, no periodic evaluation, one thread per rank.
inline TrainConfig tiny_config(const std::string& data) {
  TrainConfig c = load_train_config(config_path("tiny.toml"), {});
  c.data = data;
  c.steps = 20;
  c.eval_every = 0;
  c.threads = 1;
  if (open_model_variant()) set_open_model_shape(c.model);
  if (doc_mask_variant()) {
    c.doc_mask = true;
    c.model.seq_len = kDocMaskSeqLen;
    // Otherwise the variant would prove nothing: every window must pack several documents.
    static const int fewest = fewest_documents_per_window(data, kDocMaskSeqLen);
    if (fewest < 3)
      throw std::runtime_error("doc_mask variant: a window of the test data holds only " + std::to_string(fewest) +
                               " documents; it needs >= 3");
  }
  return c;
}

// Bytes the memory ledger holds as activations right now (this process).
inline double activation_bytes() {
  return double(MemoryLedger::instance().snapshot().current[int(MemCategory::activations)]);
}

// Bytes of `kind` per step over the distinct communicators among `comms`. The mesh hands out one
// communicator for every request naming the same ranks (a group and its axes, say), so two names
// may be one object, whose counters must be read once.
inline std::vector<const Comm*> distinct(std::initializer_list<const Comm*> comms) {
  std::vector<const Comm*> out;
  for (const Comm* c : comms)
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}
inline void reset_comm_stats(std::initializer_list<const Comm*> comms) {
  for (const Comm* c : distinct(comms)) c->reset_stats();
}
inline double comm_bytes_per_step(std::initializer_list<const Comm*> comms, CommOpKind kind, int steps) {
  double bytes = 0;
  for (const Comm* c : distinct(comms)) bytes += double(c->stats().bytes_of(kind));
  return bytes / steps;
}

struct SerialComparison {
  double worst_loss = 0;       // max over steps of |a - b| / |b|
  double worst_grad_norm = 0;  // max over steps of |a - b| / |b|, the norm before clipping
  double worst_weight = 0;  // max over parameters of |a - b|
  double val_diff = 0;      // validation loss, relative
  double serial_activation_bytes = 0;  // what the serial model's construction allocated
  bool serial_learned = false;         // the serial loss fell: the comparison means something
  // Per-step loss and gradient norm 1e-5 relative, final weights 1e-4, validation loss 1e-5
  // (principle 1, docs/principles.md). The norm is what catches a uniform gradient-scale error (a
  // sum where a mean belongs): AdamW's update is nearly scale-free and clipping removes the rest,
  // so the losses barely move.
  bool ok() const {
    return worst_loss <= 1e-5 && worst_grad_norm <= 1e-5 && worst_weight <= 1e-4 && val_diff <= 1e-5 &&
           serial_learned;
  }
};

// Trains the serial run `serial_cfg` in this process and compares it with a finished parallel
// run (its full weights and validation loss already gathered). A run of another length or model
// size counts as infinitely far.
inline SerialComparison compare_with_serial(const Trainer& run, const std::vector<float>& run_weights,
                                            double run_val, const TrainConfig& serial_cfg) {
  SerialComparison r;
  const double before = activation_bytes();
  Trainer serial(serial_cfg, temp_dir("serial"), nullptr);
  r.serial_activation_bytes = activation_bytes() - before;
  serial.quiet = true;
  serial.run();
  const std::vector<float> serial_weights = serial.full_params();
  r.serial_learned = serial.history().back().loss < serial.history().front().loss;
  r.val_diff = std::fabs(run_val - serial.evaluate()) / run_val;
  // The serial run's attention must have gone through the document-masked kernels (the windows'
  // several documents each are checked by tiny_config).
  if (serial_cfg.doc_mask && serial.model().document_tiles().visited == 0) {
    std::printf("doc_mask: the serial run's attention ran no document-masked tile\n");
    r.worst_loss = std::numeric_limits<double>::infinity();
  }
  if (run.history().size() != serial.history().size() || run_weights.size() != serial_weights.size()) {
    r.worst_loss = r.worst_grad_norm = r.worst_weight = std::numeric_limits<double>::infinity();
    return r;
  }
  for (size_t i = 0; i < serial.history().size(); ++i) {
    const StepRecord &a = run.history()[i], &b = serial.history()[i];
    r.worst_loss = std::max(r.worst_loss, std::fabs(a.loss - b.loss) / std::fabs(b.loss));
    r.worst_grad_norm =
        std::max(r.worst_grad_norm, std::fabs(a.grad_norm - b.grad_norm) / std::fabs(b.grad_norm));
  }
  for (size_t i = 0; i < serial_weights.size(); ++i)
    r.worst_weight = std::max(r.worst_weight, double(std::fabs(run_weights[i] - serial_weights[i])));
  return r;
}

}  // namespace ff::testkit
