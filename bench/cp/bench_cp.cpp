// Context parallelism on 2 ranks (mpirun -np 2, one thread per rank):
//   1. activation bytes per rank of the `small` model (configs/small.toml widths) at seq_len 4096,
//      cp 1 against cp 2, from the memory ledger (what the trainer builds: the model at T / cp);
//   2. for T = 2k, 4k, 8k and cp_comm = ring, allgather, a2a: one layer's attention (forward +
//      backward) over the cp group, its wall time and the communication left exposed (time spent
//      waiting on a transfer after the compute was done), medians of --reps;
//   3. a Chrome trace of ring attention at T = 4k (--trace FILE) with the K/V transfers on the
//      "cp comm" track beside the blocks computed meanwhile on "cp compute".
// usage: mpirun -np 2 bench_cp [--reps 3] [--trace FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mesh.h"
#include "core/memory.h"
#include "model/llama.h"
#include "parallel/context/context_attention.h"
#include "train/train_config.h"

using namespace ff;

namespace {

double activation_bytes_of(ModelConfig m, int seq_len) {
  m.seq_len = seq_len;
  const auto now = [] { return double(MemoryLedger::instance().snapshot().current[int(MemCategory::activations)]); };
  const double before = now();
  Llama model(m, 1, Recompute::none);
  return now() - before;
}

struct Timing {
  double seconds, exposed;
};

Timing attention_layer(const Comm& group, int T, CpComm mode, int reps, Tracer* tracer) {
  const int H = 8, Hkv = 4, D = 32, w = (H + 2 * Hkv) * D;
  const ContextLayout layout(group.size(), group.rank(), T, CpBalance::headtail);
  ContextAttention op(group, layout, mode, tracer);
  const int Tl = layout.local_len();
  std::mt19937 gen(1 + group.rank());
  std::normal_distribution<float> dist;
  std::vector<float> qkv(size_t(Tl) * w), dqkv(qkv.size()), att(size_t(Tl) * H * D), lse(size_t(H) * Tl),
      datt(att.size());
  for (float& x : qkv) x = dist(gen);
  for (float& x : datt) x = dist(gen);
  const AttentionShape s{1, Tl, H, Hkv, D, w, w};
  const GemmContext fp32;  // the fp32 attention kernels
  std::vector<double> secs, exposed;
  for (int r = 0; r <= reps; ++r) {  // the first is a warm-up
    group.barrier();
    op.reset_exposed();
    const auto t0 = std::chrono::steady_clock::now();
    op.forward(fp32, att.data(), lse.data(), qkv.data(), qkv.data() + H * D, qkv.data() + (H + Hkv) * D, s);
    op.backward(fp32, dqkv.data(), dqkv.data() + H * D, dqkv.data() + (H + Hkv) * D, datt.data(), qkv.data(),
                qkv.data() + H * D, qkv.data() + (H + Hkv) * D, att.data(), lse.data(), s);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) secs.push_back(dt), exposed.push_back(op.exposed_seconds());
  }
  std::sort(secs.begin(), secs.end());
  std::sort(exposed.begin(), exposed.end());
  return {secs[secs.size() / 2], exposed[exposed.size() / 2]};
}

// Rank 0 collects every rank's trace events and writes one file.
void write_trace(const Comm& world, const Tracer& t, const std::string& path) {
  const std::string mine = t.events_json();
  if (world.rank() != 0) {
    int64_t n = int64_t(mine.size());
    world.send(&n, 1, 0, 7);
    world.send(reinterpret_cast<const uint8_t*>(mine.data()), mine.size(), 0, 8);
    return;
  }
  std::vector<std::string> parts{mine};
  for (int r = 1; r < world.size(); ++r) {
    int64_t n = 0;
    world.recv(&n, 1, r, 7);
    std::string s(size_t(n), ' ');
    world.recv(reinterpret_cast<uint8_t*>(s.data()), size_t(n), r, 8);
    parts.push_back(s);
  }
  Tracer::write_file(path, parts);
}

}  // namespace

int main(int argc, char** argv) {
  CommSession session(&argc, &argv);
  const Comm& world = comm_world();
  int reps = 3;
  std::string trace;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--trace")) trace = argv[i + 1];
  }
  const Mesh mesh(world, MeshDegrees{.cp = world.size()});
  const Comm& group = mesh.group(MeshGroup::cp);
  const int cp = world.size();

  if (world.rank() == 0) {
    ModelConfig m = load_train_config(std::string(FIVEFOLD_SOURCE_DIR) + "/configs/small.toml", {}).model;
    m.vocab_size = 4096;  // activations do not depend on it (logits are workspace)
    const double one = activation_bytes_of(m, 4096), per_rank = activation_bytes_of(m, 4096 / cp);
    std::printf("activations small T=4096: cp 1 %.1f MiB, cp %d %.1f MiB per rank, ratio %.4f (1/cp = %.4f)\n",
                one / 1048576, cp, per_rank / 1048576, per_rank / one, 1.0 / cp);
  }
  const char* names[] = {"ring", "allgather", "a2a"};
  for (int T : {2048, 4096, 8192})
    for (CpComm mode : {CpComm::ring, CpComm::allgather, CpComm::a2a}) {
      const Timing t = attention_layer(group, T, mode, reps, nullptr);
      double worst = t.exposed;
      world.all_reduce(&worst, 1, ReduceOp::max);
      if (world.rank() == 0)
        std::printf("layer T=%d %s: fwd+bwd %.2f ms, exposed comm %.2f ms (worst rank %.2f ms)\n", T, names[int(mode)],
                    t.seconds * 1e3, t.exposed * 1e3, worst * 1e3);
    }
  if (!trace.empty()) {
    Tracer tracer(world.rank());
    attention_layer(group, 4096, CpComm::ring, 1, &tracer);
    write_trace(world, tracer, trace);
    if (world.rank() == 0) std::printf("trace written to %s\n", trace.c_str());
  }
  return 0;
}
