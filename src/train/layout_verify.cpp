#include "train/layout_verify.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <unistd.h>

#include "train/trainer.h"

namespace ff {

double VerifyStep::loss_diff() const { return std::fabs(loss - serial_loss) / std::fabs(serial_loss); }
double VerifyStep::norm_diff() const { return std::fabs(grad_norm - serial_grad_norm) / std::fabs(serial_grad_norm); }

std::string VerifyReport::table() const {
  std::string t = fmt::format("{:>5} {:>12} {:>12} {:>10} {:>12} {:>12} {:>10}\n", "step", "loss", "serial", "rel diff",
                              "grad norm", "serial", "rel diff");
  for (const VerifyStep& s : steps)
    t += fmt::format("{:>5} {:>12.6f} {:>12.6f} {:>10.2e} {:>12.6f} {:>12.6f} {:>10.2e}{}\n", s.step, s.loss,
                     s.serial_loss, s.loss_diff(), s.grad_norm, s.serial_grad_norm, s.norm_diff(),
                     s.step == first_bad_step ? "  <- first step past tolerance" : "");
  if (first_bad_step == 0) t += fmt::format("every step within {:.0e} (loss and gradient norm, relative)\n", tolerance);
  else t += fmt::format("step {} is past the tolerance {:.0e}\n", first_bad_step, tolerance);
  return t;
}

namespace {
std::string scratch_dir(const char* what) {
  // Only world rank 0 writes; a per-process folder keeps concurrent runs apart.
  return (std::filesystem::temp_directory_path() / fmt::format("fivefold-verify-{}-{}", ::getpid(), what)).string();
}
}  // namespace

VerifyReport verify_layout(const TrainConfig& cfg, const Mesh& mesh, int steps, double tolerance,
                           float inject_grad_scale) {
  VerifyReport rep;
  rep.tolerance = tolerance;
  TrainConfig run_cfg = cfg;
  run_cfg.steps = steps, run_cfg.stop_at = 0, run_cfg.eval_every = 0, run_cfg.ckpt_every = 0;
  std::vector<StepRecord> layout_steps;
  int dp = 1;
  {
    const std::string out = scratch_dir("layout");
    Trainer run(run_cfg, out, &mesh);
    run.quiet = true;
    dp = run.config().dp;
    if (inject_grad_scale != 1.0f)
      run.after_grads_reduced = [inject_grad_scale](ModelState& s) { s.scale_grads(inject_grad_scale); };
    for (int i = 0; i < steps; ++i) layout_steps.push_back(run.train_step());
    std::filesystem::remove_all(out);
  }
  const Comm& world = mesh.world();
  if (world.rank() == 0) {
    TrainConfig serial = run_cfg;
    serial.dp = serial.tp = serial.pp = serial.cp = 1;
    serial.sp = false, serial.zero = 0, serial.chunks = 1, serial.schedule = PipeSchedule::one_f_one_b;
    serial.grad_accum = cfg.grad_accum * dp;  // the same global batch in the same micro-batches
    const std::string out = scratch_dir("serial");
    Trainer ref(serial, out, nullptr);
    ref.quiet = true;
    for (int i = 0; i < steps; ++i) {
      const StepRecord s = ref.train_step(), &l = layout_steps[size_t(i)];
      rep.steps.push_back({s.step, l.loss, s.loss, l.grad_norm, s.grad_norm});
      const VerifyStep& v = rep.steps.back();
      if (rep.first_bad_step == 0 && !(v.loss_diff() <= tolerance && v.norm_diff() <= tolerance))
        rep.first_bad_step = v.step;
    }
    std::filesystem::remove_all(out);
  }
  world.broadcast(&rep.first_bad_step, 1, 0);
  return rep;
}

}  // namespace ff
