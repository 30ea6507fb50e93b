#include "plan/cost_rates.h"

#include "plan/node_first.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

namespace {
constexpr Coll kColls[] = {Coll::all_reduce, Coll::all_gather, Coll::reduce_scatter, Coll::all_to_all, Coll::p2p};
double passes(Coll op) { return op == Coll::all_reduce ? 2 : 1; }

GemmTable read_table(const toml::node* n, const std::string& path, const char* key) {
  GemmTable g;
  if (!n) return g;
  const auto* arr = n->as_array();
  auto bad = [&] {
    return std::runtime_error(fmt::format("cluster file '{}': [rates] {} is a list of [rows, width, FLOP/s] in "
                                          "ascending (rows, width) order, e.g. [[256, 64, 5e10], [256, 256, 9e10]]",
                                          path, key));
  };
  if (!arr) throw bad();
  for (const toml::node& p : *arr) {
    const auto* t = p.as_array();
    if (!t || t->size() != 3) throw bad();
    const auto r = t->get(0)->value<double>(), w = t->get(1)->value<double>(), y = t->get(2)->value<double>();
    if (!r || !w || !y || !(*y > 0)) throw bad();
    if (!g.by_rows.empty() && (*r < g.by_rows.back().first ||
                               (*r == g.by_rows.back().first && *w <= g.by_rows.back().second.points.back().first)))
      throw bad();
    g.add(*r, *w, *y);
  }
  return g;
}

std::string table_toml(const char* key, const GemmTable& g) {
  std::string s = fmt::format("{} = [", key);
  bool first = true;
  for (const auto& [rows, curve] : g.by_rows)
    for (const auto& [w, y] : curve.points) s += fmt::format("{}[{:.6g}, {:.6g}, {:.6g}]", first ? "" : ", ", rows, w, y), first = false;
  return s + "]\n";
}

// The engine's kernel curves by key, in the order calibrate writes them.
template <class Rates>  // EngineRates, const or not
auto kernel_curves(Rates& r) -> std::vector<std::pair<decltype(&r.optimizer), const char*>> {
  return {{&r.optimizer, "optimizer"}, {&r.rmsnorm, "rmsnorm"}, {&r.rope, "rope"}, {&r.swiglu, "swiglu"},
          {&r.cross_entropy, "cross_entropy"}, {&r.weight_copy, "weight_copy"}};
}

std::string kernels_toml(const EngineRates& r) {
  if (!r.kernels_known()) return "";
  std::string s = "# the engine's kernels, all ranks at once: [elements, seconds per element] (optimizer: per "
                  "parameter; cross_entropy: per logit)\n";
  for (auto [curve, key] : kernel_curves(r)) s += rate_curve_toml(key, *curve);
  s += "# [T, head width, seconds per B H T^2 D of causal attention, forward + backward]\n" +
       table_toml("attention_dim", r.attention_dim);
  if (r.attention_fwd_dim.empty()) return s;
  return s + "# the same, the forward alone; then both with bf16 tile products (precision = bf16)\n" +
         table_toml("attention_fwd_dim", r.attention_fwd_dim) + table_toml("attention_dim_bf16", r.attention_dim_bf16) +
         table_toml("attention_fwd_dim_bf16", r.attention_fwd_dim_bf16) +
         (r.cp_block_dim.empty() ? ""
                                 : "# [chunk length, head width, seconds per B H c^2 D of a full block of context "
                                   "parallelism's block form: forward, merge, backward], fp32 then bf16\n" +
                                       table_toml("cp_block_dim", r.cp_block_dim) +
                                       table_toml("cp_block_dim_bf16", r.cp_block_dim_bf16) +
                                       "# the same for a chunk against itself (its causal diagonal block)\n" +
                                       table_toml("cp_diag_dim", r.cp_diag_dim) +
                                       table_toml("cp_diag_dim_bf16", r.cp_diag_dim_bf16));
}
}  // namespace

const char* coll_name(Coll op) {
  static const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"};
  return names[int(op)];
}

void GemmTable::add(double rows, double width, double rate) {
  if (by_rows.empty() || by_rows.back().first != rows) by_rows.push_back({rows, RateCurve{}});
  by_rows.back().second.points.emplace_back(width, rate);
}

double GemmTable::at(double rows, double width) const {
  if (by_rows.empty()) return 0;
  if (rows <= by_rows.front().first) return by_rows.front().second.at(width);
  if (rows >= by_rows.back().first) return by_rows.back().second.at(width);
  size_t i = 1;
  while (by_rows[i].first < rows) ++i;
  const double r0 = by_rows[i - 1].first, r1 = by_rows[i].first;
  const double y0 = by_rows[i - 1].second.at(width), y1 = by_rows[i].second.at(width);
  const double f = std::log(rows / r0) / std::log(r1 / r0);
  return std::exp(std::log(y0) + f * (std::log(y1) - std::log(y0)));
}

double LinkClass::seconds(Coll op, double bytes, int n) const {
  if (node_first && node_first->applies(op, bytes, n)) return node_first->seconds(op, bytes);
  const int k = int(op);
  if (op == Coll::p2p) return alpha[k] + bytes / bandwidth[k];
  if (n <= 1) return 0;
  return passes(op) * ((n - 1) * alpha[k] + double(n - 1) / n * bytes / bandwidth[k]);
}

LinkClass LinkClass::uniform(double latency, double bw) {
  LinkClass l;
  for (Coll op : kColls) l.alpha[int(op)] = latency, l.bandwidth[int(op)] = bw;
  return l;
}

void LinkClass::set_from_fit(Coll op, double fit_alpha, double fit_beta, int n) {
  // Inverse of seconds(): the fit's intercept spread over the ring's steps, its slope over the
  // bytes one link carries per byte of the fit's payload (calibrate's: the all-reduce's buffer,
  // one rank's piece of an all-gather or reduce-scatter, one peer's share of an all-to-all).
  const int k = int(op);
  const double steps = op == Coll::p2p ? 1 : passes(op) * (n - 1);
  const double share = op == Coll::p2p ? 1 : op == Coll::all_reduce ? 2.0 * (n - 1) / n : double(n - 1);
  alpha[k] = std::max(1e-9, fit_alpha / steps);
  bandwidth[k] = fit_beta > 0 ? share / fit_beta : 1e12;
}

LinkClass LinkClass::shared_by(int n, int group_per_node, int busy_per_node) const {
  if (fit_ranks < 2 || fit_ranks_per_node < 1 || fit_ranks_per_node >= fit_ranks || n < 2) return *this;
  const int g = std::clamp(group_per_node, 1, n - 1);
  const double off_node = double(n - g) / (n - 1), fit_off_node = double(fit_ranks - fit_ranks_per_node) / (fit_ranks - 1);
  const double collective = (busy_per_node * off_node) / (fit_ranks_per_node * fit_off_node);
  LinkClass l = *this;
  for (Coll c : kColls) l.bandwidth[int(c)] /= c == Coll::p2p ? std::max(1, busy_per_node) : collective;
  return l;
}

double LinkClass::off_node_bytes(Coll op, double bytes, int n, int group_per_node) const {
  if (op == Coll::p2p) return bytes;
  if (n <= 1) return 0;
  const int g = std::clamp(group_per_node, 1, n);
  const double flat = passes(op) * double(n - g) / n * bytes;
  return node_first && node_first->applies(op, bytes, n) ? flat / node_first->per_node : flat;
}

double EngineRates::usable_cores(double threads) const {
  const double C = cores, got = available_cores > 0 ? available_cores : C;
  if (busy_threads <= 0 || available_cores <= 0) return got;
  const double n0 = busy_threads;
  // The others' runnable threads: n0 of ours got C n0 / (n0 + others) where they fell short.
  const double others = got < std::min(n0, C) ? n0 * C / got - n0 : 0.0;
  return threads + others > C ? C * threads / (threads + others) : std::min(threads, C);
}

EngineRates read_rates(const toml::table& t, const std::string& path) {
  EngineRates r;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    static const char* known[] = {"cores", "available_cores", "busy_threads", "step_overhead", "collective_overhead", "gemm_fp32", "gemm_bf16", "attention",
                                  "bandwidth", "optimizer", "rmsnorm", "rope", "swiglu", "cross_entropy",
                                  "weight_copy", "attention_dim", "attention_fwd_dim", "attention_dim_bf16",
                                  "attention_fwd_dim_bf16", "cp_block_dim", "cp_block_dim_bf16", "cp_diag_dim",
                                  "cp_diag_dim_bf16"};
    if (!is_thread_scaling_key(key) && std::none_of(std::begin(known), std::end(known), [&](const char* k) { return key == k; }))
      throw std::runtime_error(fmt::format("cluster file '{}': unknown key '{}' in [rates] (cores, available_cores, busy_threads, step_overhead, collective_overhead, "
                                           "gemm_fp32, gemm_bf16, attention, bandwidth, optimizer, rmsnorm, rope, swiglu, "
                                           "cross_entropy, weight_copy, attention_dim, attention_fwd_dim, "
                                           "attention_dim_bf16, attention_fwd_dim_bf16, cp_block_dim, cp_block_dim_bf16, cp_diag_dim, "
                                           "cp_diag_dim_bf16, threads, thread_gemm, thread_attention, thread_elementwise, thread_optimizer)",
                                           path, key));
  }
  r.cores = int(t["cores"].value_or(0));
  r.step_overhead = t["step_overhead"].value_or(0.0);
  r.collective_overhead = t["collective_overhead"].value_or(0.0);
  r.available_cores = t["available_cores"].value_or(0.0);
  r.busy_threads = int(t["busy_threads"].value_or(int64_t(0)));
  r.gemm_fp32 = read_table(t.get("gemm_fp32"), path, "gemm_fp32");
  r.gemm_bf16 = read_table(t.get("gemm_bf16"), path, "gemm_bf16");
  r.attention = read_rate_curve(t.get("attention"), path, "attention");
  r.bandwidth = read_rate_curve(t.get("bandwidth"), path, "bandwidth");
  for (auto [curve, key] : kernel_curves(r)) *curve = read_rate_curve(t.get(key), path, key);
  r.attention_dim = read_table(t.get("attention_dim"), path, "attention_dim");
  r.attention_fwd_dim = read_table(t.get("attention_fwd_dim"), path, "attention_fwd_dim");
  r.attention_dim_bf16 = read_table(t.get("attention_dim_bf16"), path, "attention_dim_bf16");
  r.attention_fwd_dim_bf16 = read_table(t.get("attention_fwd_dim_bf16"), path, "attention_fwd_dim_bf16");
  r.cp_block_dim = read_table(t.get("cp_block_dim"), path, "cp_block_dim");
  r.cp_block_dim_bf16 = read_table(t.get("cp_block_dim_bf16"), path, "cp_block_dim_bf16");
  r.cp_diag_dim = read_table(t.get("cp_diag_dim"), path, "cp_diag_dim");
  r.cp_diag_dim_bf16 = read_table(t.get("cp_diag_dim_bf16"), path, "cp_diag_dim_bf16");
  r.thread_scaling = read_thread_scaling(t, path);
  if (r.cores <= 0 || r.gemm_fp32.empty() || r.attention.empty() || r.bandwidth.empty())
    throw std::runtime_error(fmt::format("cluster file '{}': [rates] needs cores > 0, gemm_fp32, attention and "
                                         "bandwidth (write it with `fivefold calibrate`)",
                                         path));
  return r;
}

std::string rates_to_toml(const EngineRates& r) {
  return fmt::format("\n[rates]  # one core, one thread\ncores = {}\navailable_cores = {:.3f}  # what the ranks got, "
                     "all busy\nstep_overhead = {:.6g}  # s\ncollective_overhead = {:.6g}  # s per blocking collective "
                     "mid-step, beyond alpha-beta\n",
                     r.cores, r.available_cores, r.step_overhead, r.collective_overhead) +
         (r.busy_threads > 0 ? fmt::format("busy_threads = {}  # the job's threads per node while available_cores was "
                                           "measured\n",
                                           r.busy_threads)
                             : "") +
         "# [rows, width, FLOP/s]: a linear layer's forward, dgrad and wgrad, operands rotated out of the cache\n" +
         table_toml("gemm_fp32", r.gemm_fp32) + table_toml("gemm_bf16", r.gemm_bf16) + "# [T, seconds per B H T^2 D of causal attention, forward + backward]\n" +
         rate_curve_toml("attention", r.attention) + "# [working-set bytes, bytes/s]\n" + rate_curve_toml("bandwidth", r.bandwidth) +
         kernels_toml(r) + thread_scaling_toml(r.thread_scaling);
}

LinkClass read_link_class(const toml::table* t, const LinkClass& fallback, const std::string& path, const char* name) {
  if (!t) return fallback;
  LinkClass l = fallback;
  for (const auto& [k, v] : *t) {
    const std::string key(k.str());
    if (key == "fitted_on") {  // [ranks, ranks per node] of the group the fits were taken on
      const auto* shape = v.as_array();
      if (!shape || shape->size() != 2 || !(shape->get(0)->value_or(0) >= 2) || !(shape->get(1)->value_or(0) >= 1))
        throw std::runtime_error(fmt::format("cluster file '{}': [{}] fitted_on = [ranks >= 2, ranks per node >= 1]",
                                             path, name));
      l.fit_ranks = int(shape->get(0)->value_or(0)), l.fit_ranks_per_node = int(shape->get(1)->value_or(0));
      continue;
    }
    if (key == "cpu_seconds_per_byte") {
      const auto x = v.value<double>();
      if (!x || !std::isfinite(*x) || *x < 0)
        throw std::runtime_error(fmt::format("cluster file '{}': [{}] cpu_seconds_per_byte is a number >= 0, the "
                                             "kernel's CPU seconds per byte a node sends or receives over the link "
                                             "(`fivefold calibrate` across nodes measures it; 0 or absent: not "
                                             "charged)",
                                             path, name));
      l.cpu_seconds_per_byte = *x;
      continue;
    }
    int op = -1;
    for (Coll c : kColls)
      if (key == coll_name(c)) op = int(c);
    const auto* pair = v.as_array();
    const bool two = pair && pair->size() == 2;
    const double a = two ? pair->get(0)->value_or(0.0) : 0.0, b = two ? pair->get(1)->value_or(0.0) : 0.0;
    if (op < 0 || !(a > 0) || !(b > 0))
      throw std::runtime_error(fmt::format("cluster file '{}': [{}] takes all_reduce, all_gather, reduce_scatter, "
                                           "all_to_all, p2p = [alpha seconds, bandwidth bytes/s] (got '{}')",
                                           path, name, key));
    l.alpha[op] = a, l.bandwidth[op] = b;
  }
  return l;
}

std::string link_class_to_toml(const LinkClass& l, const char* name) {
  std::string s = fmt::format("\n[{}]  # per collective: [alpha per ring step (s), bandwidth per link (bytes/s)]\n", name);
  for (Coll c : kColls) s += fmt::format("{} = [{:.6g}, {:.6g}]\n", coll_name(c), l.alpha[int(c)], l.bandwidth[int(c)]);
  if (l.fit_ranks > 0)
    s += fmt::format("fitted_on = [{}, {}]  # ranks, ranks per node (sharing its link) of the fits\n", l.fit_ranks,
                     l.fit_ranks_per_node);
  if (l.cpu_seconds_per_byte > 0)
    s += fmt::format("cpu_seconds_per_byte = {:.6g}  # the kernel's CPU (system + irq + softirq) per byte a node "
                     "sends or receives over the link\n",
                     l.cpu_seconds_per_byte);
  return s;
}

}  // namespace ff
