// Time per call of all-reduce, reduce-scatter and all-gather across nodes: Comm's flat pairwise
// algorithm, Comm's hierarchical (node-first) form of each and MPI's own
// collective on the same communicator (the `coll` component mpirun selected: tuned by default,
// han with --mca coll_han_priority 100). The variants alternate within each repetition, in a
// rotating order, so machine load hits them alike; the slowest rank's time counts, median of reps.
//
//   netns_nodes.sh mpirun --hostfile H -np 4 bench_xnode_collectives [--reps 5] [--label tuned]
//
// Prints one markdown row per (operation, size): milliseconds per call of each variant.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mpi_native.h"
#include "comm/nodes.h"

namespace {

using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Variant {
  std::string name;
  std::function<void()> call;
};

// Seconds per call, the slowest rank's.
double time_calls(const ff::Comm& world, const std::function<void()>& call, int iters) {
  world.barrier();
  auto t0 = clock_type::now();
  for (int i = 0; i < iters; ++i) call();
  double t = std::chrono::duration<double>(clock_type::now() - t0).count() / iters;
  world.all_reduce(&t, 1, ff::ReduceOp::max);
  return t;
}

// Every node-first threshold at `min_bytes`: SIZE_MAX is the flat algorithm, 0 the hierarchical.
void node_first_from(const ff::Comm& world, size_t min_bytes) {
  ff::CommOptions o = world.options();
  o.hierarchical_min_bytes = o.hierarchical_reduce_scatter_min_bytes = o.hierarchical_all_gather_min_bytes =
      min_bytes;
  world.set_options(o);
}
void flat(const ff::Comm& world) { node_first_from(world, SIZE_MAX); }
void hierarchical(const ff::Comm& world) { node_first_from(world, 0); }

std::string size_text(size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

int main(int argc, char** argv) {
  ff::CommSession session(&argc, &argv);
  const ff::Comm& world = ff::comm_world();
  int reps = 5;
  std::string label = "MPI";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--label") == 0) label = std::string("MPI ") + argv[i + 1];
  }
  const int p = world.size();
  if (world.rank() == 0) {
    std::printf("%d ranks on %d nodes, float32 sum, ms per call (slowest rank, median of %d reps)\n\n", p,
                ff::node_count(), reps);
    std::printf("| op | size | Comm flat | Comm hierarchical | %s | best |\n|---|---|---|---|---|---|\n",
                label.c_str());
  }
  for (size_t bytes : {size_t(64) << 10, size_t(1) << 20, size_t(2) << 20, size_t(4) << 20, size_t(8) << 20,
                        size_t(16) << 20, size_t(64) << 20}) {
    size_t n = bytes / sizeof(float);
    size_t chunk = n / size_t(p);  // the sizes divide by every rank count used here
    std::vector<float> full(n, 1.0f), reduced(n), part(chunk, 1.0f);
    int iters = int(std::clamp<size_t>((size_t(16) << 20) / bytes, 1, 20));
    auto native = [&](const std::function<void(MPI_Comm)>& f) { ff::with_native_comm(world, f); };
    std::vector<std::pair<std::string, std::vector<Variant>>> ops = {
        {"all_reduce",
         {{"flat", [&] { flat(world); world.all_reduce(full.data(), n); }},
          {"hier", [&] { hierarchical(world); world.all_reduce(full.data(), n); }},
          {"mpi", [&] { native([&](MPI_Comm c) {
             // Out of place: han's in-place all-reduce crashed here (Open MPI 4.1.4).
             MPI_Allreduce(full.data(), reduced.data(), int(n), MPI_FLOAT, MPI_SUM, c); }); }}}},
        {"reduce_scatter",
         {{"flat", [&] { flat(world); world.reduce_scatter(full.data(), part.data(), n); }},
          {"hier", [&] { hierarchical(world); world.reduce_scatter(full.data(), part.data(), n); }},
          {"mpi", [&] { native([&](MPI_Comm c) {
             MPI_Reduce_scatter_block(full.data(), part.data(), int(chunk), MPI_FLOAT, MPI_SUM, c); }); }}}},
        {"all_gather",
         {{"flat", [&] { flat(world); world.all_gather(part.data(), full.data(), n); }},
          {"hier", [&] { hierarchical(world); world.all_gather(part.data(), full.data(), n); }},
          {"mpi", [&] { native([&](MPI_Comm c) {
             MPI_Allgather(part.data(), int(chunk), MPI_FLOAT, full.data(), int(chunk), MPI_FLOAT, c); }); }}}},
    };
    for (auto& [op, variants] : ops) {
      std::vector<std::vector<double>> times(variants.size());
      for (auto& v : variants) time_calls(world, v.call, 1);  // warm-up: pages, groups, MPI setup
      for (int rep = 0; rep < reps; ++rep) {
        for (size_t k = 0; k < variants.size(); ++k) {
          size_t v = (k + size_t(rep)) % variants.size();
          times[v].push_back(time_calls(world, variants[v].call, iters));
        }
      }
      if (world.rank() != 0) continue;
      auto ms = [&](const char* name) {
        for (size_t v = 0; v < variants.size(); ++v)
          if (variants[v].name == name) return median(times[v]) * 1e3;
        return -1.0;
      };
      double f = ms("flat"), h = ms("hier"), m = ms("mpi");
      std::string best = "flat";
      if (h > 0 && h < f && (m < 0 || h < m)) best = "hierarchical";
      if (m < std::min(f, h > 0 ? h : f)) best = label;
      std::printf("| %s | %s | %.2f | %s | %.2f | %s |\n", op.c_str(), size_text(bytes).c_str(), f,
                  h > 0 ? (std::to_string(h).substr(0, std::to_string(h).find('.') + 3)).c_str() : "-", m,
                  best.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
