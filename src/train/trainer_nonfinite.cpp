#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "comm/comm_world.h"
#include "train/trainer.h"

// What the trainer does with a step that went non-finite, and the checkpoints a loss spike defers.
namespace ff {

StepRecord Trainer::nonfinite_step(double loss, double norm, float grad_scale,
                                   std::chrono::steady_clock::time_point t0) {
  const std::string what = describe_nonfinite(loss, norm);
  if (cfg_.on_nonfinite == NonfiniteAction::skip) {
    // The batch is consumed and the schedule moves on; the weights and AdamW moments stay as they
    // were, so the state stays the last healthy one.
    ++step_;
    if (par_->fp8()) par_->fp8()->end_step();  // fp8: finite amaxes recorded, a non-finite one ignored
    if (leader())
      std::fprintf(stderr, "warning: step %d skipped (on_nonfinite = skip): %s\n", step_, what.c_str());
    if (const std::string why = skip_budget_.record(true); !why.empty())
      throw AgreedError(fmt::format("step {}: {}; the weights are the last healthy step's, and no checkpoint is "
                                    "written of a run that is not training. {}; {}",
                                    step_, why, last_checkpoint_text(), nonfinite_advice()));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    StepRecord r{step_, loss, norm, schedule_.at(step_), seconds};
    r.skipped = true;
    history_.push_back(r);
    return r;
  }
  std::string where;
  if (cfg_.pp == 1) {
    where = locate_nonfinite(par_->model(), par_->state().params(), mesh_ ? &mesh_->world() : nullptr,
                             batch_inputs_.data(), batch_targets_.data(), cfg_.grad_accum, cfg_.micro_batch,
                             cfg_.model.seq_len, grad_scale);
  } else {
    where =
        "not located: the locator re-runs the step on whole models (pp = 1); resume the last checkpoint "
        "with pp = 1 and the same data to locate it";
  }
  throw AgreedError(fmt::format(
      "step {}: {}; the loss became {}. First point that went bad: {}. Stopped before the update "
      "(on_nonfinite = stop); {}; {}, or on_nonfinite = skip",
      step_ + 1, what, loss, where, last_checkpoint_text(), nonfinite_advice()));
}

std::string Trainer::last_checkpoint_text() const {
  if (saved_step_ < 0) return fmt::format("'{}' holds no checkpoint of this run yet", out_dir_);
  return fmt::format("no checkpoint follows this step, the last one ({}/step_{}) is from before it", out_dir_,
                     saved_step_);
}

std::string Trainer::nonfinite_advice() const {
  // grad_clip already set is no advice; a smaller one may be.
  if (cfg_.grad_clip > 0) return fmt::format("lower lr (now {}; grad_clip is {})", cfg_.lr, cfg_.grad_clip);
  return fmt::format("lower lr (now {}) or set grad_clip (1.0 is usual)", cfg_.lr);
}

void Trainer::checkpoint_if_due(const StepRecord& r, int last, bool time_due) {
  if (r.spike_median > 0 && leader())
    std::fprintf(stderr, "warning: loss spike at step %d: %.6g > %g x the recent median %.6g%s\n", r.step,
                 r.loss, double(cfg_.loss_spike), r.spike_median,
                 cfg_.ckpt_every > 0 ? "; checkpoints wait for a step without a spike" : "");
  const bool due = ((cfg_.ckpt_every > 0 && step_ % cfg_.ckpt_every == 0) || time_due) && step_ != last;
  // The state after a spike may be a dead model (a huge update): keep the previous checkpoint until
  // the next step's loss confirms this one.
  if (r.spike_median > 0) {
    save_deferred_ = save_deferred_ || due;
    return;
  }
  if (due || (save_deferred_ && step_ != last)) save();
  save_deferred_ = false;
}

}  // namespace ff
