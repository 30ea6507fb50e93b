// sgemm ceilings of oneDNN and OpenBLAS measured side by side in one process, plus memcpy
// bandwidth, to choose FIVEFOLD_GEMM and to give MFU its denominator. Runs of the two libraries
// alternate, so slow drift of a shared machine hits both alike; each figure is the best of
// several rounds spread over the run, and a pause precedes every switch so one library's idle
// spinning threads (OpenMP's spin wait, OpenBLAS's pthread pool) do not eat into the other's.
// Usage: bench_gemm [threads=2] [quick]
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gemm.h"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

void pause_for_switch() { std::this_thread::sleep_for(std::chrono::milliseconds(150)); }

struct Shape {
  std::string name;
  bool ta, tb;
  int M, N, K;
  int per_step;  // times one training step of the bench model runs this product
  double flop() const { return 2.0 * M * N * K; }
};

enum class Lib { kOneDnn, kOpenBlas };

void sgemm(Lib lib, const Shape& s, const float* A, const float* B, float* C) {
  // Row-major, tightly packed: lda is the stored row length of op's input.
  const int lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
  if (lib == Lib::kOneDnn) {
    dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.M, s.N, s.K, 1.0f, A, lda, B, ldb, 0.0f, C,
               s.N);
  } else {
    cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
                s.M, s.N, s.K, 1.0f, A, lda, B, ldb, 0.0f, C, s.N);
  }
}

struct Buffers {
  std::vector<float> A, B, C;
  explicit Buffers(size_t n) : A(n), B(n), C(n) {
    for (size_t i = 0; i < n; ++i) {
      A[i] = static_cast<float>(i % 13) * 0.125f - 0.75f;
      B[i] = static_cast<float>(i % 11) * 0.1f - 0.5f;
    }
  }
};

// Best GFLOP/s of `runs` calls, after one warm-up call.
double time_lib(Lib lib, const Shape& s, Buffers& b, int runs) {
  sgemm(lib, s, b.A.data(), b.B.data(), b.C.data());
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = clock_type::now();
    sgemm(lib, s, b.A.data(), b.B.data(), b.C.data());
    best = std::min(best, seconds_since(t0));
  }
  return s.flop() / best * 1e-9;
}

// Each of the OpenMP threads runs its own product at once, as the model does when it calls
// GEMM from inside a parallel region: a library that then starts its own threads
// oversubscribes the cores. Returns the summed GFLOP/s.
double time_inside_parallel(Lib lib, const Shape& s, std::vector<Buffers>& per_thread, int runs) {
  double best = 1e30;
  for (int r = 0; r <= runs; ++r) {
    const auto t0 = clock_type::now();
#pragma omp parallel
    {
      Buffers& b = per_thread[omp_get_thread_num()];
      sgemm(lib, s, b.A.data(), b.B.data(), b.C.data());
    }
    if (r > 0) best = std::min(best, seconds_since(t0));
  }
  return s.flop() * omp_get_max_threads() / best * 1e-9;
}

// The trainer alternates its own OpenMP kernels with GEMMs. With a library on a separate thread
// pool, the OpenMP workers still spin when the GEMM starts and the two pools fight for cores.
double time_interleaved(Lib lib, const Shape& s, Buffers& b, std::vector<float>& other, int runs) {
  double best = 1e30;
  for (int r = 0; r <= runs; ++r) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < 10; ++i) {
      const long long n = static_cast<long long>(other.size());
      float* o = other.data();
#pragma omp parallel for schedule(static)
      for (long long j = 0; j < n; ++j) o[j] = o[j] * 0.5f + 1.0f;
      sgemm(lib, s, b.A.data(), b.B.data(), b.C.data());
    }
    if (r > 0) best = std::min(best, seconds_since(t0));
  }
  return 10 * s.flop() / best * 1e-9;
}

// Bytes copied per second by memcpy over buffers far larger than the caches, split across the
// threads; DRAM traffic is twice this (read + write).
double memcpy_gbs(size_t bytes, int threads) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 1e30;
  for (int r = 0; r < 6; ++r) {
    const auto t0 = clock_type::now();
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      const size_t chunk = bytes / n, begin = t * chunk;
      const size_t len = t == n - 1 ? bytes - begin : chunk;
      std::memcpy(dst.data() + begin, src.data() + begin, len);
    }
    if (r > 0) best = std::min(best, seconds_since(t0));
  }
  return bytes / best * 1e-9;
}

constexpr Lib kLibs[2] = {Lib::kOneDnn, Lib::kOpenBlas};

// GFLOP/s of dW += dy^T x for an (in -> out) linear over N tokens, through ff::linear_backward.
double time_linear_dw(int in, int out, int N, Buffers& b) {
  double best = 1e30;
  for (int r = 0; r < 4; ++r) {
    const auto t0 = clock_type::now();
    ff::linear_backward(nullptr, b.C.data(), b.A.data(), b.B.data(), nullptr, N, in, out);
    if (r > 0) best = std::min(best, seconds_since(t0));
  }
  return 2.0 * N * in * out / best * 1e-9;
}

const char* openblas_kind() {
  switch (openblas_get_parallel()) {
    case 0: return "sequential";
    case 1: return "pthreads";
    case 2: return "openmp";
    default: return "unknown";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const bool quick = argc > 2 && std::string(argv[2]) == "quick";
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  const dnnl_version_t* v = dnnl_version();
  std::printf("threads %d | oneDNN %d.%d.%d (cpu runtime %s) | OpenBLAS %s build, core %s\n",
              threads, v->major, v->minor, v->patch,
              v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other", openblas_kind(),
              openblas_get_corename());
  std::printf("  %s\n\n", openblas_get_config());

  // configs/bench.toml: N = 2048 tokens per step, d = 384, qkv 1152 (6 heads x 64, no GQA),
  // FFN 1024 so gate_up 2048, vocab 4096, 6 layers. Per linear: forward y = x W^T (NT),
  // dx = dy W (NN), dW = dy^T x (TN).
  const int N = 2048, d = 384, layers = 6;
  struct Linear {
    const char* name;
    int in, out, per_step;
  };
  const Linear linears[] = {{"qkv", d, 1152, layers},
                            {"attn_out", d, d, layers},
                            {"gate_up", d, 2048, layers},
                            {"down", 1024, d, layers},
                            {"lm_head", d, 4096, 1}};
  std::vector<Shape> shapes = {{"square 2048", false, false, 2048, 2048, 2048, 0}};
  if (!quick) shapes.push_back({"square 4096", false, false, 4096, 4096, 4096, 0});
  for (const auto& l : linears) {
    const std::string name = l.name;
    shapes.push_back({name + " fwd", false, true, N, l.out, l.in, l.per_step});
    shapes.push_back({name + " dx", false, false, N, l.in, l.out, l.per_step});
    shapes.push_back({name + " dW", true, false, l.out, l.in, N, l.per_step});
  }

  size_t most = 0;
  for (const auto& s : shapes)
    most = std::max({most, size_t(s.M) * s.K, size_t(s.K) * s.N, size_t(s.M) * s.N});
  Buffers buf(most);

  const Shape probe{"qkv fwd", false, true, N, 1152, d, 0};
  std::vector<Buffers> per_thread;
  for (int t = 0; t < threads; ++t) per_thread.emplace_back(most);
  std::vector<float> other(1 << 16, 1.0f);  // 256 KiB: cache resident, mostly sync cost

  // Rounds are the outer loop, so each figure's samples are spread over the whole run and a
  // burst of load from another job spoils at most one of them.
  const int rounds = quick ? 2 : 4;
  std::vector<std::array<double, 2>> best(shapes.size(), {0.0, 0.0});
  std::array<double, 2> par{0.0, 0.0}, mix{0.0, 0.0};
  std::vector<double> via_ff(std::size(linears), 0.0);
  double load[3];
  getloadavg(load, 3);
  const double load_start = load[0];
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Shape& s = shapes[i];
      const int runs = s.flop() > 5e10 ? 1 : (s.flop() > 5e9 ? 3 : 8);
      for (int l = 0; l < 2; ++l) {
        pause_for_switch();
        best[i][l] = std::max(best[i][l], time_lib(kLibs[l], s, buf, runs));
      }
    }
    for (int l = 0; l < 2; ++l) {
      pause_for_switch();
      par[l] = std::max(par[l], time_inside_parallel(kLibs[l], probe, per_thread, 3));
      pause_for_switch();
      mix[l] = std::max(mix[l], time_interleaved(kLibs[l], probe, buf, other, 2));
    }
    for (size_t j = 0; j < std::size(linears); ++j) {
      via_ff[j] = std::max(via_ff[j], time_linear_dw(linears[j].in, linears[j].out, N, buf));
    }
  }
  getloadavg(load, 3);
  std::printf("load average (1 min) %.2f at start, %.2f at end; best of %d rounds\n\n", load_start,
              load[0], rounds);

  std::printf(
      "| shape (M x N x K, op) | oneDNN GFLOP/s | OpenBLAS GFLOP/s | oneDNN / OpenBLAS |\n");
  std::printf("|---|---:|---:|---:|\n");
  double step_flop = 0, step_t[2] = {0, 0};
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    std::printf("| %s (%d x %d x %d, %c%c) | %.1f | %.1f | %.2f |\n", s.name.c_str(), s.M, s.N, s.K,
                s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', best[i][0], best[i][1],
                best[i][0] / best[i][1]);
    step_flop += s.per_step * s.flop();
    for (int l = 0; l < 2; ++l) step_t[l] += s.per_step * s.flop() / (best[i][l] * 1e9);
  }
  std::printf(
      "| **one training step's GEMMs** (%.0f GFLOP, weighted by count) | %.1f | %.1f | %.2f |\n\n",
      step_flop * 1e-9, step_flop / step_t[0] * 1e-9, step_flop / step_t[1] * 1e-9,
      step_t[1] / step_t[0]);

  std::printf("| qkv fwd (2048 x 1152 x 384) in context | oneDNN GFLOP/s | OpenBLAS GFLOP/s |\n");
  std::printf("|---|---:|---:|\n");
  std::printf("| one product per thread inside `omp parallel` (sum) | %.1f | %.1f |\n", par[0],
              par[1]);
  std::printf("| alternating with an OpenMP loop (64K floats) | %.1f | %.1f |\n\n", mix[0], mix[1]);

  // What the trainer gets for dW through ff::linear_backward (FIVEFOLD_GEMM backend, and for
  // oneDNN the swapped product where out >= 4 in), beside the raw TN calls above.
  std::printf("| dW = dy^T x through ff::linear_backward (%s) | GFLOP/s |\n|---|---:|\n",
              ff::gemm_backend_name());
  // The step mix again with these dW figures in place of the chosen backend's raw calls.
  const int chosen = std::string(ff::gemm_backend_name()) == "onednn" ? 0 : 1;
  double ff_t = 0;
  for (size_t j = 0; j < std::size(linears); ++j) {
    std::printf("| %s dW (%d x %d x %d) | %.1f |\n", linears[j].name, linears[j].out, linears[j].in,
                N, via_ff[j]);
    const double dw_flop = 2.0 * N * linears[j].in * linears[j].out;
    ff_t += linears[j].per_step * dw_flop / (via_ff[j] * 1e9);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (!shapes[i].ta) ff_t += shapes[i].per_step * shapes[i].flop() / (best[i][chosen] * 1e9);
  }
  std::printf("| **one training step's GEMMs as ff runs them** | %.1f |\n\n",
              step_flop / ff_t * 1e-9);

  std::printf("1-thread square 2048: ");
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  const Shape sq{"square 2048", false, false, 2048, 2048, 2048, 0};
  for (int l = 0; l < 2; ++l) {
    pause_for_switch();
    std::printf("%s %.1f GFLOP/s%s", l == 0 ? "oneDNN" : "OpenBLAS", time_lib(kLibs[l], sq, buf, 3),
                l == 0 ? ", " : "\n");
  }
  const size_t bytes = size_t(1) << 28;
  std::printf("memcpy 256 MiB: %.1f GB/s on 1 thread, %.1f GB/s on %d threads (bytes copied/s)\n",
              memcpy_gbs(bytes, 1), memcpy_gbs(bytes, threads), threads);
  return 0;
}
