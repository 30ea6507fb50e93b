#include "plan/layout_spec.h"

#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

const char* precision_name(StatePrecision p) { return p == StatePrecision::fp32 ? "fp32" : "mixed"; }

std::string LayoutSpec::str() const {
  std::string s = fmt::format("dp={},tp={}", dp, tp);
  if (sp) s += ",sp";
  if (cp > 1) s += fmt::format(",cp={},cp_comm={}", cp, cp_comm_names().name(cp_comm));
  if (ep > 1) s += fmt::format(",ep={}", ep);
  s += fmt::format(",pp={}", pp);
  if (pp > 1)
    s += fmt::format(",{}{}", pipe_schedule_names().name(schedule), chunks > 1 ? fmt::format(",chunks={}", chunks) : "");
  s += fmt::format(",mb={},m={},zero={},recompute={}", micro_batch, grad_accum, zero, recompute_name(recompute));
  if (precision != StatePrecision::fp32) s += ",precision=mixed";
  if (gemm != Precision::fp32) s += fmt::format(",precision={}", precision_name(gemm));
  if (dp_mode != DpMode::sync) s += fmt::format(",dp_mode={}", dp_mode_name(dp_mode));
  if (threads > 0) s += fmt::format(",threads={}", threads);
  return s;
}

namespace {
int positive(const std::string& key, const std::string& v) {
  size_t used = 0;
  int n = -1;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
  }
  if (used != v.size() || n < (key == "zero" ? 0 : 1))
    throw std::runtime_error(fmt::format("layout key '{}' needs a {} integer (got '{}')", key,
                                         key == "zero" ? "non-negative" : "positive", v));
  return n;
}

template <typename T>
T named(const std::string& key, const std::string& v, const EnumTable<T>& names) {
  try {
    return names.parse(v, key);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("layout key '{}': {}", key, e.what()));
  }
}
}  // namespace

LayoutSpec parse_layout(const std::string& text, std::set<std::string>* given) {
  LayoutSpec L;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string k = item.substr(0, eq), v = eq == std::string::npos ? "" : item.substr(eq + 1);
    const std::optional<PipeSchedule> named_schedule = pipe_schedule_names().find(k);
    if (given) given->insert(named_schedule ? "schedule" : k == "micro_batch" ? "mb" : k == "grad_accum" ? "m" : k);
    if (k == "sp") L.sp = v.empty() || v == "true" || v == "1";
    else if (named_schedule) L.schedule = *named_schedule;
    else if (k == "schedule") L.schedule = named(k, v, pipe_schedule_names());
    else if (k == "dp") L.dp = positive(k, v);
    else if (k == "tp") L.tp = positive(k, v);
    else if (k == "pp") L.pp = positive(k, v);
    else if (k == "cp") L.cp = positive(k, v);
    else if (k == "ep") L.ep = positive(k, v);
    else if (k == "chunks") L.chunks = positive(k, v);
    else if (k == "threads") L.threads = positive(k, v);
    else if (k == "mb" || k == "micro_batch") L.micro_batch = positive(k, v);
    else if (k == "m" || k == "grad_accum") L.grad_accum = positive(k, v);
    else if (k == "zero") L.zero = positive(k, v);
    else if (k == "recompute") L.recompute = named(k, v, recompute_names());
    else if (k == "cp_comm") L.cp_comm = named(k, v, cp_comm_names());
    else if (k == "dp_mode") L.dp_mode = named(k, v, dp_mode_names());
    else if (k == "precision") {
      if (v != "fp32" && v != "mixed" && v != "bf16")
        throw std::runtime_error("layout key 'precision' is fp32, bf16 (the engine's bf16 GEMMs) or mixed (paper-scale "
                                 "16-bit states) (got '" + v + "')");
      if (v == "mixed") L.precision = StatePrecision::mixed;
      if (v == "bf16") L.gemm = Precision::bf16;
    } else
      throw std::runtime_error(fmt::format(
          "unknown layout key '{}' in '{}'; the keys are dp, tp, sp, pp, cp, cp_comm, ep, schedule, chunks, mb, m, "
          "zero, recompute, precision, dp_mode, threads (e.g. \"tp=2,pp=2,zero=1\")",
          k, text));
  }
  return L;
}

}  // namespace ff
