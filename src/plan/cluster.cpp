#include "plan/cluster.h"

#include <filesystem>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "kernels/cpu_isa.h"

namespace ff {

namespace {
const std::set<std::string> kKeys = {"name", "devices_per_node", "peak_flops", "peak_flops_16", "gemm_efficiency", "memory_bytes",
                                     "intra_bandwidth", "inter_bandwidth", "intra_latency", "inter_latency",
                                     "precision", "activation_bytes", "flash_attention", "engine",
                                     "bf16_gemm", "fp16_gemm",
                                     "measured", "rates", "same_node", "across_nodes", "routing"};  // calibrate's raw measurements, for people
}

ClusterSpec load_cluster(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error(fmt::format("cluster file '{}' does not exist; write one with `fivefold calibrate "
                                         "--out {}` or use configs/clusters/*.toml",
                                         path, path));
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(fmt::format("cluster file '{}': {}", path, std::string(e.description())));
  }
  for (const auto& [k, v] : t)
    if (!kKeys.count(std::string(k.str())))
      throw std::runtime_error(fmt::format("cluster file '{}': unknown key '{}'", path, std::string(k.str())));
  auto num = [&](const char* key, double fallback, bool required) {
    const auto v = t[key].value<double>();
    if (!v && required) throw std::runtime_error(fmt::format("cluster file '{}' needs the key '{}'", path, key));
    const double x = v ? *v : fallback;
    if (!(x > 0)) throw std::runtime_error(fmt::format("cluster file '{}': '{}' must be positive", path, key));
    return x;
  };
  ClusterSpec c;
  c.name = t["name"].value_or(std::filesystem::path(path).stem().string());
  c.devices_per_node = int(num("devices_per_node", 1, true));
  c.peak_flops = num("peak_flops", 0, true);
  c.peak_flops_16 = t.contains("peak_flops_16") ? num("peak_flops_16", 0, true) : 0;
  c.gemm_efficiency = num("gemm_efficiency", 0.5, false);
  c.memory_bytes = num("memory_bytes", 0, true);
  c.intra_bandwidth = num("intra_bandwidth", 0, true);
  c.inter_bandwidth = num("inter_bandwidth", c.intra_bandwidth, false);
  c.intra_latency = num("intra_latency", 5e-6, false);
  c.inter_latency = num("inter_latency", 20e-6, false);
  const std::string prec = t["precision"].value_or(std::string("mixed"));
  if (prec != "mixed" && prec != "fp32")
    throw std::runtime_error(fmt::format("cluster file '{}': precision is mixed or fp32 (got '{}')", path, prec));
  c.precision = prec == "fp32" ? StatePrecision::fp32 : StatePrecision::mixed;
  c.activation_bytes = int(num("activation_bytes", c.precision == StatePrecision::fp32 ? 4 : 2, false));
  c.flash_attention = t["flash_attention"].value_or(true);
  c.engine = t["engine"].value_or(false);
  auto path_key = [&](const char* key, std::initializer_list<const char*> names) {
    const std::string v = t[key].value_or(std::string());
    if (v.empty()) return v;
    std::string all;
    for (const char* n : names) {
      if (v == n) return v;
      all += std::string(all.empty() ? "" : " | ") + "\"" + n + "\"";
    }
    throw std::runtime_error(fmt::format("cluster file '{}': {} is {} (got '{}')", path, key, all, v));
  };
  c.bf16_gemm = path_key("bf16_gemm", {"AMX", "AVX512-BF16", "oneDNN", "widened", "tiles"});
  c.fp16_gemm = path_key("fp16_gemm", {"oneDNN", "widened"});
  c.same_node = read_link_class(t["same_node"].as_table(), LinkClass::uniform(c.intra_latency, c.intra_bandwidth),
                                path, "same_node");
  c.across_nodes = read_link_class(t["across_nodes"].as_table(),
                                   LinkClass::uniform(c.inter_latency, c.inter_bandwidth), path, "across_nodes");
  if (const toml::table* r = t["rates"].as_table()) c.rates = read_rates(*r, path);
  c.routing = read_routing(t["routing"].as_table(), path);
  return c;
}

std::string cluster_to_toml(const ClusterSpec& c) {
  return fmt::format(
      "name = \"{}\"\ndevices_per_node = {}\npeak_flops = {:.6g}  # per device, FLOP/s\ngemm_efficiency = {:.4f}\n"
      "memory_bytes = {:.6g}  # per device\nintra_bandwidth = {:.6g}  # bytes/s per device\ninter_bandwidth = {:.6g}\n"
      "intra_latency = {:.6g}  # seconds\ninter_latency = {:.6g}\nprecision = \"{}\"\nactivation_bytes = {}\n"
      "flash_attention = {}\nengine = {}\n",
      c.name, c.devices_per_node, c.peak_flops, c.gemm_efficiency, c.memory_bytes, c.intra_bandwidth,
      c.inter_bandwidth, c.intra_latency, c.inter_latency, precision_name(c.precision), c.activation_bytes,
      c.flash_attention, c.engine) +
         (c.peak_flops_16 > 0 ? fmt::format("peak_flops_16 = {:.6g}  # per device, FLOP/s with bf16 GEMM inputs\n",
                                            c.peak_flops_16)
                              : "") +
         (c.bf16_gemm.empty() ? "" : fmt::format("bf16_gemm = \"{}\"  # who multiplies bf16 inputs\n", c.bf16_gemm)) +
         (c.fp16_gemm.empty() ? "" : fmt::format("fp16_gemm = \"{}\"\n", c.fp16_gemm)) +
         (c.rates.known() ? rates_to_toml(c.rates) : "") + link_class_to_toml(c.same_node, "same_node") +
         link_class_to_toml(c.across_nodes, "across_nodes") + routing_to_toml(c.routing);
}

double ClusterSpec::peak16() const {
  if (peak_flops_16 > 0 || !engine) return peak_flops_16 > 0 ? peak_flops_16 : peak_flops;
  const bool units = bf16_gemm.empty() ? bf16_path() != Bf16Path::emulated
                                       : bf16_gemm == "AMX" || bf16_gemm == "AVX512-BF16" || bf16_gemm == "tiles";
  return units ? 2 * peak_flops : peak_flops;  // vdpbf16ps: 4 FLOPs per lane
}

EngineHost ClusterSpec::engine_host(int threads) const {
  EngineHost h = this_engine_host(threads);
  if (!bf16_gemm.empty()) h.native_bf16 = bf16_gemm != "widened", h.tile_gemm = bf16_gemm == "tiles";
  if (!fp16_gemm.empty()) h.native_fp16 = fp16_gemm != "widened";
  return h;
}

bool group_spans_nodes(int stride, int n, int world, int per_node) {
  if (n <= 1 || per_node <= 0) return false;
  for (int r = 0; r < world; ++r) {
    if ((r / stride) % n) continue;  // not the first rank of its group
    const int last = r + (n - 1) * stride;
    if (last < world && r / per_node != last / per_node) return true;
  }
  return false;
}

}  // namespace ff
