// Bus bandwidth of Comm::all_reduce vs raw MPI_Allreduce on the same communicator, the two
// alternated within one run (the machine is shared, so only side-by-side ratios mean
// anything), and the overlap of an async all-reduce with compute.
//
//   mpirun -np 2 build/bench/comm/bench_allreduce [--reps 11]
//
// busbw = S / t * 2(n-1)/n (nccl-tests, FORMULAS.md), S = bytes per rank, t = the slowest
// rank's time per call, median over reps.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/mpi_native.h"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The slowest rank's time: a collective is done when its last participant is.
double slowest(const ff::Comm& world, double t) {
  world.all_reduce(&t, 1, ff::ReduceOp::max);
  return t;
}

double time_comm(const ff::Comm& world, std::vector<float>& x, int iters) {
  world.barrier();
  auto t0 = clock_type::now();
  for (int i = 0; i < iters; ++i) world.all_reduce(x.data(), x.size());
  return slowest(world, seconds_since(t0) / iters);
}

double time_raw_mpi(const ff::Comm& world, std::vector<float>& x, int iters) {
  double t = 0;
  ff::with_native_comm(world, [&](MPI_Comm comm) {
    MPI_Barrier(comm);
    auto t0 = clock_type::now();
    for (int i = 0; i < iters; ++i) {
      MPI_Allreduce(MPI_IN_PLACE, x.data(), int(x.size()), MPI_FLOAT, MPI_SUM, comm);
    }
    t = seconds_since(t0) / iters;
  });
  return slowest(world, t);
}

// Fixed work (not fixed time): if the comm thread takes CPU away from it, it takes longer,
// and the overlap figure shows that honestly.
double compute(long units) {
  volatile double acc = 0;
  for (long u = 0; u < units; ++u) {
    double a = acc;
    for (int i = 0; i < 1000; ++i) a = a + std::sqrt(double(i) + a) * 1e-9;
    acc = a;
  }
  return acc;
}

void bandwidth_table(const ff::Comm& world, int reps) {
  int n = world.size();
  if (world.rank() == 0) {
    std::printf("## all-reduce bus bandwidth, %d ranks, float32 sum, median of %d reps\n", n, reps);
    std::printf("| size | Comm busbw GB/s | raw MPI busbw GB/s | Comm / raw |\n|---|---|---|---|\n");
  }
  for (size_t bytes = 256 << 10; bytes <= (64u << 20); bytes *= 2) {
    std::vector<float> x(bytes / sizeof(float), 1.0f);
    // Enough calls per timing that the clock and the barrier are noise (~20 ms per batch).
    int iters = int(std::clamp<size_t>((size_t(128) << 20) / bytes, 2, 100));
    time_comm(world, x, 1);  // warm-up: page faults, scratch buffers, MPI's internal setup
    time_raw_mpi(world, x, 1);
    std::vector<double> comm_t, raw_t;
    for (int rep = 0; rep < reps; ++rep) {
      // Alternate which goes first, so a drift in machine load hits both alike.
      if (rep % 2 == 0) {
        comm_t.push_back(time_comm(world, x, iters));
        raw_t.push_back(time_raw_mpi(world, x, iters));
      } else {
        raw_t.push_back(time_raw_mpi(world, x, iters));
        comm_t.push_back(time_comm(world, x, iters));
      }
    }
    double factor = 2.0 * (n - 1) / n;
    double comm_bw = double(bytes) / median(comm_t) * factor / 1e9;
    double raw_bw = double(bytes) / median(raw_t) * factor / 1e9;
    if (world.rank() == 0) {
      std::string size = bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB"
                                             : std::to_string(bytes >> 10) + " KiB";
      std::printf("| %s | %.2f | %.2f | %.2f |\n", size.c_str(), comm_bw, raw_bw, comm_bw / raw_bw);
      std::fflush(stdout);
    }
  }
}

struct OverlapResult {
  double compute, all_reduce, overlapped, wait;
};

// One overlap measurement. `busy`: the compute is arithmetic on the rank's core (fixed work,
// so CPU taken by the transfer shows up as a longer compute); otherwise it is a sleep of the
// same length, a stand-in for work that leaves the core free (an accelerator kernel).
OverlapResult overlap_once(const ff::Comm& world, std::vector<float>& x, long units,
                           double sleep_s, bool busy, int reps) {
  auto work = [&] {
    if (busy) compute(units);
    else std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
  };
  std::vector<double> alone_c, alone_a, both, waits;
  for (int rep = 0; rep < reps; ++rep) {
    world.barrier();
    auto c0 = clock_type::now();
    work();
    alone_c.push_back(slowest(world, seconds_since(c0)));

    alone_a.push_back(time_comm(world, x, 1));

    world.barrier();
    auto o0 = clock_type::now();
    ff::CommRequest req = world.all_reduce_async(x.data(), x.size());
    work();
    auto w0 = clock_type::now();
    req.wait();
    double wait_s = seconds_since(w0);
    both.push_back(slowest(world, seconds_since(o0)));
    waits.push_back(slowest(world, wait_s));
  }
  return {median(alone_c), median(alone_a), median(both), median(waits)};
}

void overlap(const ff::Comm& world, int reps) {
  size_t count = (16u << 20) / sizeof(float);
  std::vector<float> x(count, 1.0f);
  // Calibrate the work to ~3x one all-reduce (same units on every rank: rank 0 decides).
  std::vector<double> ar;
  for (int i = 0; i < 5; ++i) ar.push_back(time_comm(world, x, 1));
  double ar_s = median(ar);
  auto t0 = clock_type::now();
  compute(2000);
  double unit_s = seconds_since(t0) / 2000;
  double units_d = 3 * ar_s / unit_s;
  world.broadcast(&units_d, 1, 0);
  long units = long(units_d);

  OverlapResult busy = overlap_once(world, x, units, 0, true, reps);
  OverlapResult idle = overlap_once(world, x, units, busy.compute, false, reps);
  if (world.rank() == 0) {
    std::printf("\n## overlap: async all-reduce of 16 MiB + compute C + wait, %d ranks, median of %d reps\n",
                world.size(), reps);
    std::printf("| compute | C alone | A = all-reduce alone | O = async + C + wait | wait() after C | hidden (C + A - O) / A |\n");
    std::printf("|---|---|---|---|---|---|\n");
    for (auto [name, r] : {std::pair{"busy loop (fixed work)", busy}, std::pair{"sleep (core left free)", idle}}) {
      std::printf("| %s | %.1f ms | %.1f ms | %.1f ms | %.2f ms = %.1f%% of A | %.0f%% |\n", name,
                  r.compute * 1e3, r.all_reduce * 1e3, r.overlapped * 1e3, r.wait * 1e3,
                  100 * r.wait / r.all_reduce, 100 * (r.compute + r.all_reduce - r.overlapped) / r.all_reduce);
    }
  }
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);  // all threads of this rank, the comm thread included
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// What waiting for a late peer costs: rank 1 joins a 1 MiB all-reduce `late` after rank 0;
// rank 0's CPU time over that wait, (a) blocked in the collective (the waiter drives), (b)
// with an async collective while its main thread sleeps (the comm thread polls).
void idle_cost(const ff::Comm& world) {
  const double late = 1.0;
  std::vector<float> x((1u << 20) / sizeof(float), 1.0f);
  double blocked = 0, async = 0;
  for (int mode = 0; mode < 2; ++mode) {
    world.barrier();
    double cpu0 = cpu_seconds();
    auto t0 = clock_type::now();
    if (world.rank() != 0) std::this_thread::sleep_for(std::chrono::duration<double>(late));
    if (mode == 0 || world.rank() != 0) {
      world.all_reduce(x.data(), x.size());
    } else {
      ff::CommRequest req = world.all_reduce_async(x.data(), x.size());
      while (!req.test()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    double share = (cpu_seconds() - cpu0) / seconds_since(t0);
    (mode == 0 ? blocked : async) = share;
  }
  if (world.rank() == 0) {
    std::printf("\n## idle cost: rank 0 waits %.0f s for a late peer in a 1 MiB all-reduce\n", late);
    std::printf("| rank 0 waits in | CPU time / wall time of rank 0 (all threads) |\n|---|---|\n");
    std::printf("| blocking all_reduce (the waiter drives) | %.2f%% |\n", 100 * blocked);
    std::printf("| async all_reduce, main thread asleep (comm thread drives) | %.2f%% |\n", 100 * async);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ff::CommSession session(&argc, &argv);
  const ff::Comm& world = ff::comm_world();
  int reps = 11;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  }
  if (world.size() < 2) {
    std::fprintf(stderr, "bench_allreduce needs at least 2 ranks: mpirun -np 2 %s\n", argv[0]);
    return 2;
  }
  bandwidth_table(world, reps);
  overlap(world, reps);
  idle_cost(world);
  return 0;
}
