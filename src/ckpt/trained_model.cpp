#include "ckpt/trained_model.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "ckpt/meta.h"
#include "ckpt/sharded.h"
#include "ckpt/state_pieces.h"

namespace ff {

namespace fs = std::filesystem;

TrainedModel load_trained_model(const std::string& dir_or_file, int max_batch) {
  TrainedModel t;
  const CheckpointMeta meta = checkpoint_meta_in(dir_or_file);
  t.checkpoint_path = meta.dir;
  // The tokenizer lives in the run folder, beside the step_N folders.
  const fs::path run_dir = fs::path(meta.dir).parent_path();
  if (!fs::exists(run_dir / "tokenizer.json") && !fs::exists(run_dir / "tokenizer.model"))
    throw std::runtime_error(fmt::format(
        "no tokenizer beside the checkpoint: expected '{}' (train copies it there; copy the "
        "data folder's tokenizer.model or tokenizer.json if it was removed)",
        (run_dir / "tokenizer.model").string()));
  t.tokenizer_path = tokenizer_file_in(run_dir.string());
  t.state = meta.state;
  t.tokenizer = open_tokenizer(t.tokenizer_path);
  // A model may have more rows than its tokenizer has ids (a padded vocabulary, Qwen2.5's) when
  // the checkpoint's recorded checksum proves this is its tokenizer; never fewer.
  const bool own_tokenizer = t.state.tokenizer_checksum != 0 && t.state.tokenizer_checksum == t.tokenizer->checksum();
  if (t.tokenizer->vocab_size() > t.state.model.vocab_size ||
      (t.tokenizer->vocab_size() < t.state.model.vocab_size && !own_tokenizer))
    throw std::runtime_error(fmt::format(
        "vocabulary mismatch: the checkpoint '{}' was trained with {} tokens but the tokenizer "
        "'{}' has {}; use the tokenizer file of the data the model was trained on",
        t.checkpoint_path, t.state.model.vocab_size, t.tokenizer_path,
        t.tokenizer->vocab_size()));
  if (t.state.tokenizer_checksum != 0 && t.state.tokenizer_checksum != t.tokenizer->checksum())
    throw std::runtime_error(fmt::format(
        "tokenizer mismatch: '{}' is not the tokenizer the checkpoint '{}' was trained with (its "
        "checksum differs; the file was replaced or damaged); copy back the data folder's "
        "tokenizer file that the run was prepared with",
        t.tokenizer_path, t.checkpoint_path));
  t.model = std::make_unique<Llama>(t.state.model, max_batch, Recompute::none);
  t.params.allocate(t.model->layout().total(), MemCategory::params);
  // Only the parameters (4 bytes each), never the moments, straight into the model's buffer.
  ShardedCheckpointReader reader(meta.dir);
  const StateRuns runs{{{0, t.params.size(), t.params.data()}}, {}, {}};
  read_state_pieces(reader, t.model->layout(), runs, /*params_only=*/true);
  t.bytes_read = reader.stats().bytes_read;
  return t;
}

}  // namespace ff
