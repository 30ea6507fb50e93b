#include "train/trained_model.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

namespace fs = std::filesystem;

TrainedModel load_trained_model(const std::string& dir_or_file, int max_batch) {
  TrainedModel t;
  t.checkpoint_path = checkpoint_path_in(dir_or_file);
  t.tokenizer_path = (fs::path(t.checkpoint_path).parent_path() / "tokenizer.model").string();
  if (!fs::exists(t.tokenizer_path))
    throw std::runtime_error(fmt::format(
        "no tokenizer beside the checkpoint: expected '{}' (train copies it there; copy the "
        "data folder's tokenizer.model if it was removed)",
        t.tokenizer_path));
  t.state = load_checkpoint(t.checkpoint_path, nullptr, nullptr, nullptr, 0);
  t.tokenizer = std::make_unique<Tokenizer>(t.tokenizer_path);
  if (t.tokenizer->vocab_size() != t.state.model.vocab_size)
    throw std::runtime_error(fmt::format(
        "vocabulary mismatch: the checkpoint '{}' was trained with {} tokens but the tokenizer "
        "'{}' has {}; use the tokenizer.model of the data the model was trained on",
        t.checkpoint_path, t.state.model.vocab_size, t.tokenizer_path,
        t.tokenizer->vocab_size()));
  if (t.state.tokenizer_checksum != 0 && t.state.tokenizer_checksum != t.tokenizer->checksum())
    throw std::runtime_error(fmt::format(
        "tokenizer mismatch: '{}' is not the tokenizer the checkpoint '{}' was trained with (its "
        "checksum differs; the file was replaced or damaged); copy back the data folder's "
        "tokenizer.model that the run was prepared with",
        t.tokenizer_path, t.checkpoint_path));
  t.model = std::make_unique<Llama>(t.state.model, max_batch, Recompute::none);
  t.params.allocate(t.model->layout().total(), MemCategory::params);
  load_checkpoint(t.checkpoint_path, t.params.data(), nullptr, nullptr, t.params.size());
  return t;
}

}  // namespace ff
