#pragma once
// A fresh run whose first weights are a checkpoint's instead of the initializer's: `init_from =
// DIR` (an `import` folder, a run folder or one of its step_N folders), or a run folder whose
// newest checkpoint is weights-only (what `import` writes), trained in place. Only the parameters
// are read, each rank its own boxes through the sharded reader (ckpt/state_pieces.h); the
// optimizer, step, data position and fp16 loss scale start fresh (the torchtitan / Megatron
// "initial load" of a fine-tune). A run folder that already holds a full checkpoint resumes it
// instead, whatever init_from says: init_from sets the weights of a fresh run only.
//
// The model's shape is the checkpoint's: its shape keys are taken from it before the config is
// validated, so a fine-tune needs no model config, and a shape key the user set to another value
// is refused by name. seq_len is a training key here (default: the checkpoint's; at most the
// context the model serves).
#include <optional>
#include <string>
#include <vector>

#include "ckpt/meta.h"
#include "train/train_config.h"

namespace ff {

struct WeightsStart {
  CheckpointMeta checkpoint;   // the step_N folder the weights are read from, and its state
  std::string folder;          // as the user named it (init_from), or the run folder
  std::string tokenizer_path;  // the model's tokenizer file beside the checkpoint; "" when none
};

// The keys a checkpoint's model fixes (every model key but seq_len and init_std).
const std::vector<std::string>& model_shape_keys();

// The newest complete checkpoint of DIR (a run folder or a step_N folder); throws naming the
// path, what is wrong (missing, no complete checkpoint, a damaged manifest) and the fix.
WeightsStart open_weights_start(const std::string& dir);

// Where this run's first weights come from: nullopt when it resumes out_latest (a full
// checkpoint of the run folder) or starts from the initializer. out_latest: the run folder's
// newest complete checkpoint (read_latest_checkpoint_meta).
std::optional<WeightsStart> find_weights_start(const TrainConfig& c, const std::optional<CheckpointMeta>& out_latest,
                                               const std::string& out_dir);

// Before the config is validated (the command does this; tests that set keys in code pass the
// keys they set): when the run starts from a checkpoint's weights, or resumes a run folder while
// init_from is set, c.model becomes that checkpoint's model. A shape key in set_by whose value
// differs is refused ("dim is 576 in DIR's checkpoint but 512 here (--dim); drop the key or make
// it 576"); seq_len keeps the user's value if set (refused above the model's context), else the
// checkpoint's. vocab_size 0 counts as unset ("from the tokenizer").
void take_model_from_checkpoint(TrainConfig& c, const std::string& out_dir, const KeySources& set_by);

// "" when equal; else names every field of the weights' shape that differs (seq_len aside, which
// the weights do not fix; the context length compared instead).
std::string describe_weights_difference(const ModelConfig& checkpoint, const ModelConfig& run);

}  // namespace ff
