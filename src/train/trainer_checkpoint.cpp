#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "ckpt/meta.h"
#include "ckpt/sharded.h"
#include "ckpt/sharded_run.h"
#include "ckpt/state_pieces.h"
#include "io/tokenizer/tokenizer.h"
#include "train/stop_signals.h"
#include "train/trainer.h"

// The trainer's checkpoints: each rank saves and loads only what it holds (its ZeRO chunks, tp
// blocks and pipeline stage), described as boxes of the whole model's named tensors, so any
// layout resumes any other and no rank ever holds the full state.
namespace ff {

namespace fs = std::filesystem;

void Trainer::load_checkpoint_state(const std::string& step_dir) {
  ShardedCheckpointReader reader(step_dir);
  read_state_pieces(reader, par_->layout(), par_->state().checkpoint_runs(false));
  if (par_->fp8()) par_->fp8()->load(reader);  // fp8 scales; none (another precision's): afresh
  // Replicated state beside the model's (DiLoCo's global weights and outer momentum), whole.
  const int64_t n = int64_t(par_->layout().total());
  for (auto& [name, dst] : par_->state().extra_state()) {
    const std::string tensor = "extra/" + name;
    if (!reader.has(tensor))
      throw std::runtime_error(fmt::format("checkpoint '{}' has no {}, which this run's dp_mode keeps; resume "
                                           "with the dp_mode that wrote it, or use a new --out folder",
                                           step_dir, name));
    reader.read(flat_read_requests(tensor, Box{0, 1, 0, n}, 0, n, dst));
  }
}

void Trainer::save() {
  if (step_ == saved_step_) return;  // resumed at the last step: that checkpoint is this state
  const StopSignals::SaveGuard guard;  // a second stop signal waits for this save
  CheckpointState s;
  s.model = cfg_.model, s.step = step_, s.data = loader_->position(), s.config_toml = config_to_toml(cfg_);
  if (par_->moe()) s.router_bias = par_->moe()->router_bias();
  if (scaler_) s.loss_scale = scaler_->state();
  s.lr_schedule_steps = schedule_.total;
  s.data_shards = data_record_;
  // The run folder's copy is the tokenizer that sample, eval and export will decode with; only
  // rank 0's info reaches the manifest.
  if (leader())
    s.tokenizer_checksum = tokenizer_file_checksum(tokenizer_file_in(out_dir_));
  const nlohmann::json layout = {{"ranks", world_size()}, {"dp", cfg_.dp}, {"cp", cfg_.cp},
                                 {"tp", cfg_.tp},         {"pp", cfg_.pp}, {"zero", cfg_.zero}};
  const auto skip = saved_elsewhere(cfg_.model, par_->layout(), par_->tp_size(), par_->tp_rank(), par_->split(),
                                    par_->pp_rank());
  std::vector<SavePiece> pieces = state_save_pieces(par_->layout(), par_->state().checkpoint_runs(true), skip);
  // Replicated state beside the model's (DiLoCo's): every rank holds the same copy, so the leader
  // saves it whole.
  const int64_t n = int64_t(par_->layout().total());
  if (leader())
    for (const auto& [name, data] : par_->state().extra_state())
      pieces.push_back({"extra/" + name, {n}, Box{0, 1, 0, n}, 0, n, data});
  if (par_->fp8()) par_->fp8()->add_save_pieces(pieces);  // one rank per pipeline stage
  // Said at the steps a progress line is (log_every, the last): a run saving every few steps
  // between sparse progress lines would otherwise log mostly saves.
  const int last = cfg_.stop_at > 0 ? cfg_.stop_at : cfg_.steps;
  const bool say = !quiet && (step_ % cfg_.log_every == 0 || step_ >= last);
  report_->saving(step_, step_dir_path(out_dir_, step_), !say);
  const auto t0 = std::chrono::steady_clock::now();
  saver_->save(checkpoint_info(s, layout), pieces);
  report_->saved(step_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 cfg_.ckpt_async, !say);
  saved_step_ = step_;
  last_save_time_ = std::chrono::steady_clock::now();
}

void Trainer::finish_saves() {
  const StopSignals::SaveGuard guard;  // a background write is published here
  saver_->finish();
}

}  // namespace ff
