#include <filesystem>
#include <vector>

#include "io/atomic_file.h"
#include "io/tokenizer.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

// The trainer's state as a whole model: gathered from every shard, block and stage for a
// checkpoint, and cut back into this rank's part when one is loaded, whatever layout saved it.
namespace ff {

namespace fs = std::filesystem;

void Trainer::gather_full_state(std::vector<float>& p, std::vector<float>& m, std::vector<float>& v) {
  const size_t n = model_->layout().total();
  p.resize(n), m.resize(n), v.resize(n);
  state_->gather_full(p.data(), m.data(), v.data());
  // This rank's blocks -> its stage's whole tensors -> the whole model.
  const ParamLayout stage(cfg_.model, nullptr, &parts_);
  for (std::vector<float>* x : {&p, &m, &v}) {
    if (slicer_) {
      std::vector<float> whole(stage.total());
      assemble_full_tensors(*tp_, cfg_.model, model_->layout(), x->data(), whole.data(), &parts_);
      x->swap(whole);
    }
    if (pp_size_ > 1) {
      std::vector<float> whole(ParamLayout(cfg_.model).total());
      assemble_stages(*pp_, cfg_.model, split_, x->data(), whole.data());
      x->swap(whole);
    }
  }
}

void Trainer::load_full_state(std::vector<float>& p, std::vector<float>& m, std::vector<float>& v) {
  // A checkpoint loads under any layout: keep this stage's tensors, then this rank's blocks.
  const ParamLayout whole(cfg_.model), stage(cfg_.model, nullptr, &parts_);
  for (std::vector<float>* x : {&p, &m, &v}) {
    if (pp_size_ > 1) {
      std::vector<float> mine(stage.total());
      copy_views_by_name(whole, x->data(), stage, mine.data());
      x->swap(mine);
    }
    if (slicer_) {
      std::vector<float> mine(model_->layout().total());
      extract_local_tensors(model_->layout(), stage, x->data(), mine.data());
      x->swap(mine);
    }
  }
  state_->load_full(p.data(), m.data(), v.data());
}

std::vector<float> Trainer::full_params() {
  std::vector<float> p, m, v;
  gather_full_state(p, m, v);
  return p;
}

void Trainer::save() {
  std::vector<float> p, m, v;
  gather_full_state(p, m, v);
  const size_t n = p.size();
  if (!leader()) return;
  CheckpointState s{cfg_.model, step_, loader_->position(), config_to_toml(cfg_)};
  // The run folder's copy is the tokenizer that sample, eval and export will decode with.
  s.tokenizer_checksum = Tokenizer((fs::path(out_dir_) / "tokenizer.model").string()).checksum();
  std::vector<std::pair<std::string, const float*>> extra;  // replicated: rank 0's is everyone's
  for (const auto& [name, data] : state_->extra_state()) extra.push_back({name, data});
  save_checkpoint((fs::path(out_dir_) / checkpoint_file_name()).string(), s, p.data(), m.data(),
                  v.data(), n, extra);
}

}  // namespace ff
