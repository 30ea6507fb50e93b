#pragma once
// What the init_from tests share: a run configured to start from a checkpoint's weights the way
// `fivefold train --init-from DIR` configures it (no model keys: they come from DIR), and a
// weights-only checkpoint as `fivefold import` writes one, made here without import.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/meta.h"
#include "ckpt/saver.h"
#include "ckpt/state_pieces.h"
#include "ckpt/trained_model.h"
#include "io/tokenizer/tokenizer.h"
#include "io/tokenizer/tokenizer_files.h"
#include "model/parameters.h"
#include "train/init_from.h"
#include "train/run_data.h"
#include "train/train_config.h"

namespace ff::testkit {

// tiny.toml's training keys (batch, lr, warm-up) and none of its model keys, starting from `from`;
// the model is then resolved from the checkpoint as the command does (set_by: keys "the user set").
inline TrainConfig init_from_config(const std::string& data, const std::string& from, const std::string& out_dir,
                                    int steps, const KeySources& set_by = {}) {
  TrainConfig c;
  c.data = data;
  c.init_from = from;
  c.steps = steps;
  c.micro_batch = 4;
  c.lr = 1e-3f;
  c.warmup_steps = 2;
  c.eval_every = 0;
  c.eval_batches = 2;
  c.threads = 1;
  take_model_from_checkpoint(c, out_dir, set_by);
  return c;
}

// The mean loss the model saved in source_dir gives on the first global batch run c draws: the
// batch drawn here from c's data and seed, the model loaded for use as `fivefold eval` loads it
// (the whole checkpoint on one process, no init_from, no layout), one forward.
inline double source_loss_on_first_batch(const TrainConfig& c, const std::string& source_dir) {
  const int G = c.global_batch(), T = c.model.seq_len;
  const RunTokens tokens = read_run_tokens(c, open_run_tokenizer(c));
  MixtureLoader loader(tokens.train, T, c.seed);
  std::vector<int32_t> in(size_t(G) * T), tgt(size_t(G) * T);
  const uint64_t targets = loader.next_batch(G, 0, G, in.data(), tgt.data());
  TrainedModel src = load_trained_model(source_dir, G);
  return src.model->forward_loss(src.params.data(), in.data(), tgt.data(), G, T) / double(targets);
}

// A weights-only checkpoint (step 0, parameter pieces alone, state.weights_only) of model m in
// run_dir, with the tokenizer file `tokenizer` beside it and its checksum recorded.
inline void write_weights_only_checkpoint(const std::string& run_dir, const ModelConfig& m,
                                          const std::vector<float>& params, const std::string& tokenizer) {
  const ParamLayout layout(m);
  if (params.size() != layout.total()) throw std::logic_error("write_weights_only_checkpoint: wrong parameter count");
  StateRuns runs;  // no moments: nothing for adam_m / adam_v
  runs.params = {{0, layout.total(), const_cast<float*>(params.data())}};  // only read by a save
  CheckpointState s;
  s.model = m;
  s.weights_only = true;
  s.tokenizer_checksum = tokenizer_file_checksum(tokenizer);
  const nlohmann::json serial = {{"ranks", 1}, {"dp", 1}, {"cp", 1}, {"tp", 1}, {"pp", 1}, {"zero", 0}};
  std::filesystem::create_directories(run_dir);
  CheckpointSaver saver(run_dir, nullptr, 1, false);
  saver.save(checkpoint_info(s, serial), state_save_pieces(layout, runs, {}));
  saver.finish();
  copy_tokenizer_files(tokenizer, run_dir, std::filesystem::path(tokenizer).filename().string());
}

}  // namespace ff::testkit
