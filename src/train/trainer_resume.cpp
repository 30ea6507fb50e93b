#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "ckpt/sharded.h"
#include "comm/comm_world.h"
#include "train/trainer.h"

// Resuming a run folder: the checkpoint checked against this run before anything is built, then
// loaded; a checkpoint whose data proves damaged sends every rank back to the previous complete
// one, so a restart (by hand or by `fivefold launch`) continues from the newest good state.
namespace ff {

void Trainer::check_resume(const CheckpointMeta& resume, uint64_t tokenizer_checksum,
                           const std::string& tok_path) {
  std::string diff = describe_model_difference(resume.state.model, cfg_.model);
  if (!diff.empty())
    throw std::runtime_error(fmt::format(
        "the checkpoint '{}' is of a different model ({}); use a new --out folder, or the "
        "same model keys to resume it",
        resume.dir, diff));
  if (resume.state.tokenizer_checksum != 0 && resume.state.tokenizer_checksum != tokenizer_checksum)
    throw std::runtime_error(fmt::format(
        "the checkpoint '{}' was trained with another tokenizer than '{}' (checksums differ); "
        "resume with the data folder the run was prepared with, or use a new --out folder",
        resume.dir, tok_path));
  // Data by content where the checkpoint recorded it: another path to the same shards resumes,
  // a shard replaced under the same path does not.
  const bool data_by_contents = !resume.state.data_shards.empty();
  if (data_by_contents)
    check_resume_data(resume.state.data_shards, data_record_, resume.dir);
  else
    data_note_ = fmt::format("note: the checkpoint {} records no data checksums (an older fivefold), so its data "
                             "was checked by the folder's path only", resume.dir);
  // Refuses (naming the key) a seed, data path (unrecorded contents) or global batch other than the
  // checkpoint's.
  resume_changes_ = check_resume_config(resume.state.config_toml, cfg_, out_dir_, data_by_contents);
  // An older checkpoint's schedule spanned the steps of the config it saved.
  std::optional<int> recorded;
  if (resume.state.lr_schedule_steps > 0)
    recorded = resume.state.lr_schedule_steps;
  else if (std::optional<int64_t> steps = saved_config_integer(resume.state.config_toml, "steps"); steps && *steps > 0)
    recorded = int(*steps);
  schedule_span_ = schedule_span(cfg_.lr_schedule_steps, cfg_.steps, recorded, cfg_.scaled_lr * cfg_.min_lr_ratio);
  if (resume.state.step > cfg_.steps)
    throw std::runtime_error(fmt::format(
        "the checkpoint '{}' is at step {}, past steps = {}; raise --steps to continue",
        resume.dir, resume.state.step, cfg_.steps));
}

CheckpointMeta Trainer::load_resume(CheckpointMeta resume, uint64_t tokenizer_checksum,
                                    const std::string& tok_path) {
  // Newer folders the scan passed over (no manifest, a truncated or missing data file, a damaged
  // manifest): said once, with why.
  if (leader())
    for (const std::string& why : resume.skipped)
      std::fprintf(stderr, "warning: passed over the checkpoint %s/%s; resuming from %s\n", out_dir_.c_str(),
                   why.c_str(), resume.dir.c_str());
  for (;;) {
    std::string damage;
    try {
      load_checkpoint_state(resume.dir);
    } catch (const CheckpointDamaged& e) {
      damage = e.what();  // names the file, the bytes and the tensor
    }
    // Every rank must continue from the same checkpoint: one rank's damaged file (a tp block or
    // ZeRO chunk the others never read) sends them all back.
    if (!any_rank(!damage.empty())) break;
    std::optional<CheckpointMeta> previous = read_latest_checkpoint_meta(out_dir_, resume.state.step);
    if (!previous) {
      if (!damage.empty() && world_size() > 1) std::fprintf(stderr, "rank %d: %s\n", world_rank(), damage.c_str());
      throw AgreedError(fmt::format(
          "cannot resume: the checkpoint '{}' is damaged ({}) and '{}' holds no earlier complete checkpoint. "
          "Restore the folder from a copy, or move it out of the run folder to start afresh",
          resume.dir, damage.empty() ? "see the rank's message above" : damage, out_dir_));
    }
    if (!damage.empty()) std::fprintf(stderr, "warning: rank %d: %s\n", world_rank(), damage.c_str());
    if (leader())
      std::fprintf(stderr,
                   "warning: the checkpoint %s is damaged (above); resuming from the previous complete one, "
                   "%s, instead\n",
                   resume.dir.c_str(), previous->dir.c_str());
    check_resume(*previous, tokenizer_checksum, tok_path);
    resume = std::move(*previous);
  }
  par_->state().after_load();
  if (leader())
    for (const std::string& kept : set_aside_damaged(out_dir_, resume.state.step))
      std::fprintf(stderr,
                   "warning: the damaged checkpoint is kept as %s (no save or keep_checkpoints deletes it); "
                   "inspect or restore it, then delete it\n",
                   kept.c_str());
  return resume;
}

}  // namespace ff
