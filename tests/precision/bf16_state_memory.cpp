// The model-state bytes of a bf16 run, from the memory ledger, against the formula for what a
// bf16 run keeps (run under mpirun -np N, data parallel over N ranks):
//   fp32 master weights 4Ψ + fp32 gradients 4Ψ + AdamW m and v 8Ψ (the fp32 run's 16Ψ, sharded by
//   the ZeRO stage as FORMULAS.md says), plus the bf16 weight copy the GEMMs read, 2Ψ, rounded
//   once per step (kernels/weight_copy.h). Per rank:
//     zero 0: 2Ψ + 16Ψ = 18Ψ     zero 1: 2Ψ + 8Ψ + 8Ψ/N     zero 2: 2Ψ + 4Ψ + 12Ψ/N
//     zero 3: 16Ψ/N (no copy: the model reads gathered buffers, which are rounded per GEMM)
// Gradients are fp32 here (grad_reduce_dtype fp32): a bf16 gradient buffer would change the 4Ψ.
// Checked two ways: the bf16 run's bytes minus the fp32 run's are exactly the copy (2Ψ, or 0 at
// zero 3), and the bf16 total is the formula within the slack of uneven ZeRO chunks (as
// dp_equivalence allows the fp32 formula).
#include <cmath>
#include <cstdio>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "core/memory.h"
#include "shared_data.h"
#include "train/trainer.h"
#include "train_fixtures.h"

using namespace ff;

namespace {

double bf16_formula_bytes(int zero, double psi, int n) {
  switch (zero) {
    case 0: return 2 * psi + 16 * psi;
    case 1: return 2 * psi + 8 * psi + 8 * psi / n;
    case 2: return 2 * psi + 4 * psi + 12 * psi / n;
    default: return 16 * psi / n;
  }
}

struct StateBytes {
  double params = 0, total = 0, psi = 0;
};

StateBytes state_bytes(const std::string& data, const Mesh& mesh, int zero, const char* precision) {
  TrainConfig c = testkit::tiny_config(data);
  c.dp = mesh.degrees().dp;
  c.zero = zero;
  c.precision = precision;
  const auto before = MemoryLedger::instance().snapshot();
  Trainer t(c, testkit::temp_dir("bf16mem"), &mesh);
  const auto after = MemoryLedger::instance().snapshot();
  StateBytes s;
  s.psi = double(t.model().layout().total());
  s.params = double(after.current[int(MemCategory::params)] - before.current[int(MemCategory::params)]);
  for (MemCategory m : {MemCategory::params, MemCategory::grads, MemCategory::optimizer})
    s.total += double(after.current[int(m)] - before.current[int(m)]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  Comm& world = comm_world();
  const int n = world.size();
  const std::string data = testkit::shared_tiny_data_dir(world);
  const Mesh mesh(world, MeshDegrees{.dp = n});
  int failures = 0;
  for (int zero = 0; zero <= 3; ++zero) {
    const StateBytes f32 = state_bytes(data, mesh, zero, "fp32"), b16 = state_bytes(data, mesh, zero, "bf16");
    const double psi = b16.psi, copy = zero < 3 ? 2 * psi : 0.0, formula = bf16_formula_bytes(zero, psi, n);
    const bool ok = b16.total - f32.total == copy && b16.params - f32.params == copy &&
                    std::fabs(b16.total - formula) <= 0.10 * formula;
    std::printf("rank %d zero %d: bf16 model-state bytes %.0f (formula %.0f = %.2f psi), fp32 %.0f, bf16 - fp32 "
                "%.0f (expected %.0f = the weight copy), psi %.0f: %s\n",
                world.rank(), zero, b16.total, formula, formula / psi, f32.total, b16.total - f32.total, copy, psi,
                ok ? "ok" : "FAIL");
    failures += !ok;
  }
  return failures == 0 ? 0 : 1;
}
