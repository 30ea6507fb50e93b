#include "ckpt/weights_checkpoint.h"

#include "ckpt/meta.h"
#include "ckpt/saver.h"
#include "ckpt/sharded_run.h"
#include "ckpt/state_pieces.h"

namespace ff {

WeightsCheckpointWriter::WeightsCheckpointWriter(std::string run_dir, CheckpointState state)
    : run_dir_(std::move(run_dir)), state_(std::move(state)) {
  state_.weights_only = true;
  step_dir_ = prepare_step_dir(run_dir_, state_.step);
  file_.emplace(step_dir_, 0, state_.step);
}

void WeightsCheckpointWriter::add(const ParamView& v, int64_t begin, int64_t end, const float* data) {
  const std::string name = checkpoint_tensor_name(StateBuffer::params, v.name);
  const Box whole = full_box(v.full_shape);
  size_t at = 0;
  for (const Box& b : split_flat_range(whole, begin, end)) {
    file_->add(name, v.full_shape, b, ConstTypedPtr(data + at));
    at += size_t(b.numel());
  }
}

void WeightsCheckpointWriter::finish() {
  ShardFileRecord record = file_->commit();
  write_manifest(step_dir_, checkpoint_info(state_, serial_layout_json()), {std::move(record)});
  publish_checkpoint(run_dir_, state_.step, 1);
}

}  // namespace ff
