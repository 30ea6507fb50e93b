#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "ckpt/sharded.h"
#include "ckpt/state_pieces.h"
#include "comm/comm_world.h"
#include "io/tokenizer/tokenizer.h"
#include "train/trainer.h"

// A fresh run whose first weights are a checkpoint's (train/init_from.h): checked against the
// data before anything is built, then loaded by each rank for the boxes it holds, the parameters
// alone, through the reader a resume uses.
namespace ff {

void Trainer::check_weights_start(const WeightsStart& start, const RunTokenizer& tokenizer) {
  const ModelConfig& m = start.checkpoint.state.model;
  const std::string diff = describe_weights_difference(m, cfg_.model);
  if (!diff.empty())
    throw std::runtime_error(fmt::format(
        "the run starts from the weights in '{}' but its model keys differ from that checkpoint's ({}); leave "
        "the model keys unset (`fivefold train` takes them from the checkpoint) or set them to its values",
        start.checkpoint.dir, diff));
  const std::string model_tokenizer =
      start.tokenizer_path.empty() ? fmt::format("the tokenizer of '{}'", start.folder) : start.tokenizer_path;
  const std::string fix = fmt::format("prepare the data with the model's tokenizer: `fivefold prepare --tokenizer {} "
                                      "--input ... --out DATA`",
                                      start.tokenizer_path.empty() ? "MODEL_TOKENIZER" : start.tokenizer_path);
  // A model may have more rows than its tokenizer has ids (Qwen2.5 pads its vocabulary); an id past
  // the model's rows would index past the embedding.
  if (tokenizer.vocab_size > m.vocab_size)
    throw std::runtime_error(fmt::format(
        "the data's tokenizer '{}' has {} tokens but the model in '{}' has only {} (vocab_size); {}",
        tokenizer.path, tokenizer.vocab_size, start.folder, m.vocab_size, fix));
  uint64_t model_checksum = start.checkpoint.state.tokenizer_checksum;
  if (model_checksum == 0 && !start.tokenizer_path.empty())
    model_checksum = tokenizer_file_checksum(start.tokenizer_path);
  if (model_checksum != 0 && model_checksum != tokenizer.checksum)
    throw std::runtime_error(fmt::format(
        "the data's tokenizer '{}' (checksum {:016x}) is not the tokenizer of the model in '{}', {} (checksum "
        "{:016x}): the data's ids would mean other tokens to the model; {}",
        tokenizer.path, tokenizer.checksum, start.folder, model_tokenizer, model_checksum, fix));
}

void Trainer::load_start_weights(const CheckpointMeta& from) {
  std::string damage;
  try {
    ShardedCheckpointReader reader(from.dir);
    read_state_pieces(reader, par_->layout(), par_->state().checkpoint_runs(false), /*params_only=*/true);
    start_read_ = reader.stats();
  } catch (const CheckpointDamaged& e) {
    damage = e.what();  // names the file, the bytes and the tensor
  }
  if (any_rank(!damage.empty())) {
    if (!damage.empty() && world_size() > 1) std::fprintf(stderr, "rank %d: %s\n", world_rank(), damage.c_str());
    throw AgreedError(fmt::format("cannot start from the weights in '{}': the checkpoint is damaged ({}); restore "
                                  "it from a copy, or import the model again",
                                  from.dir, damage.empty() ? "see the rank's message above" : damage));
  }
  par_->state().after_load();  // ZeRO-3's gathered copies, DiLoCo's global weights: from these
  if (par_->moe()) par_->moe()->set_router_bias(from.state.router_bias);
}

}  // namespace ff
