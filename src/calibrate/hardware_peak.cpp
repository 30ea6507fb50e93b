#include "calibrate/hardware_peak.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "kernels/bf16_peak.h"
#include "kernels/cpu_isa.h"
#include "kernels/fma_peak.h"
#include "kernels/gemm.h"

namespace ff {

namespace fs = std::filesystem;

std::string peak_cache_path() {
  if (const char* p = std::getenv("FIVEFOLD_PEAK_FILE")) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/fivefold/peak.json";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/fivefold/peak.json";
}

namespace {
// The unit whose peak bf16_flops_per_core is: the tile unit where the bf16 GEMMs run on it.
std::string bf16_unit_here() {
  const Bf16Path path = bf16_path();
  if (path == Bf16Path::amx && amx_tile_unit_usable()) return "AMX tiles";
  return path == Bf16Path::emulated ? "none" : "AVX512-BF16 dot products";
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown cpu";
}
}  // namespace

HardwarePeak machine_peak() {
  HardwarePeak p;
  p.cpu = cpu_model();
  p.cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const std::string path = peak_cache_path();
  try {
    std::ifstream f(path);
    if (f) {
      const nlohmann::json j = nlohmann::json::parse(f);
      // A cache from before the bf16 peak, or before the bf16 unit it belongs to, was kept lacks
      // them: measured over (an AMX CPU's cache then held the dot products' peak).
      if (j.at("cpu").get<std::string>() == p.cpu && j.at("fma_flops_per_core").get<double>() > 0 &&
          j.at("sgemm_flops_per_core").get<double>() > 0 && j.at("bf16_flops_per_core").get<double>() >= 0 &&
          j.at("bf16_unit").get<std::string>() == bf16_unit_here()) {
        p.bf16_unit = j.at("bf16_unit").get<std::string>();
        p.isa = j.at("isa").get<std::string>();
        p.fma_flops_per_core = j.at("fma_flops_per_core").get<double>();
        p.sgemm_flops_per_core = j.at("sgemm_flops_per_core").get<double>();
        p.bf16_flops_per_core = j.at("bf16_flops_per_core").get<double>();
        p.source = path;
        return p;
      }
    }
  } catch (const std::exception&) {
    // A damaged or foreign cache is measured over, not trusted.
  }
  const FmaPeak fma = measure_fma_peak();
  p.isa = fma.isa;
  p.fma_flops_per_core = fma.flops_per_core;
  p.sgemm_flops_per_core = measure_sgemm_gflops(384, 1) * 1e9;  // short products: the best is unpreempted
  p.bf16_flops_per_core = measure_bf16_gemm_peak();
  p.bf16_unit = bf16_unit_here();
  p.source = "measured";
  const nlohmann::json j = {{"cpu", p.cpu}, {"isa", p.isa}, {"fma_flops_per_core", p.fma_flops_per_core},
                            {"sgemm_flops_per_core", p.sgemm_flops_per_core},
                            {"bf16_flops_per_core", p.bf16_flops_per_core}, {"bf16_unit", p.bf16_unit},
                            {"cores", p.cores}};
  try {
    fs::create_directories(fs::path(path).parent_path());
    write_file_atomic(path, j.dump(2) + "\n");
    p.source = "measured, saved to " + path;
  } catch (const std::exception&) {
  }
  return p;
}

int cores_in_use(int world_ranks, int ranks_per_machine, int threads, int cores_per_machine) {
  const int per = std::max(1, std::min(ranks_per_machine, world_ranks));
  const int machines = (world_ranks + per - 1) / per;
  return machines * std::min(per * std::max(1, threads), cores_per_machine);
}

}  // namespace ff
