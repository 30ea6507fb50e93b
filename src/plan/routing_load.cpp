#include "plan/routing_load.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

double RoutingLoad::factor(int ep, int model_experts, int model_top_k) const {
  if (ep <= 1 || experts != model_experts || top_k != model_top_k) return 1.0;
  for (const auto& [p, f] : busiest_over_mean)
    if (p == ep) return f;
  return 1.0;
}

std::string RoutingLoad::explain() const {
  if (experts == 0)
    return "ep: routes assumed spread evenly over the ep ranks (no [routing] in the cluster file: `fivefold calibrate "
           "--routing-run RUN` measures it from a serial run of the model)";
  std::string s = fmt::format("ep: each MoE block waits for the ep rank whose experts got the most routes; measured "
                              "over {} steps of a serial run ({}) of a {}-expert top-{} model, that rank holds",
                              steps, source, experts, top_k);
  for (size_t i = 0; i < busiest_over_mean.size(); ++i)
    s += fmt::format("{} {:.2f}x the mean rank's routes on ep {}", i ? "," : "", busiest_over_mean[i].second,
                     busiest_over_mean[i].first);
  return s + " (other models: spread evenly)";
}

RoutingLoad routing_load(const std::vector<std::vector<double>>& counts, int experts, int top_k, int steps) {
  RoutingLoad r;
  r.experts = experts, r.top_k = top_k, r.steps = steps;
  for (int ep = 2; ep <= experts; ++ep) {
    if (experts % ep) continue;
    const int per = experts / ep;  // contiguous experts per rank, as ep places them
    double sum = 0;
    int n = 0;
    for (const std::vector<double>& c : counts) {
      if (int(c.size()) != experts) throw std::runtime_error("routing: a block's counts do not have one per expert");
      double total = 0, busiest = 0;
      for (int rank = 0; rank < ep; ++rank) {
        double rows = 0;
        for (int e = rank * per; e < (rank + 1) * per; ++e) rows += c[size_t(e)];
        busiest = std::max(busiest, rows), total += rows;
      }
      if (total > 0) sum += busiest / (total / ep), ++n;
    }
    if (n > 0) r.busiest_over_mean.emplace_back(ep, sum / n);
  }
  return r;
}

RoutingLoad read_routing(const toml::table* t, const std::string& path) {
  RoutingLoad r;
  if (!t) return r;
  auto bad = [&](const std::string& what) {
    return std::runtime_error(fmt::format("cluster file '{}': [routing] {} (write it with `fivefold calibrate "
                                          "--routing-run RUN`)",
                                          path, what));
  };
  for (const auto& [k, v] : *t) {
    const std::string key(k.str());
    if (key != "experts" && key != "top_k" && key != "steps" && key != "source" && key != "busiest_over_mean")
      throw bad(fmt::format("has an unknown key '{}' (experts, top_k, steps, source, busiest_over_mean)", key));
  }
  r.experts = int((*t)["experts"].value_or(int64_t(0)));
  r.top_k = int((*t)["top_k"].value_or(int64_t(0)));
  r.steps = int((*t)["steps"].value_or(int64_t(0)));
  r.source = (*t)["source"].value_or(std::string());
  if (r.experts < 2 || r.top_k < 1) throw bad("needs experts >= 2 and top_k >= 1");
  const toml::array* a = (*t)["busiest_over_mean"].as_array();
  if (!a) throw bad("needs busiest_over_mean = [[ep, factor], ...]");
  for (const toml::node& n : *a) {
    const toml::array* p = n.as_array();
    const auto ep = p && p->size() == 2 ? p->get(0)->value<int64_t>() : std::nullopt;
    const auto f = p && p->size() == 2 ? p->get(1)->value<double>() : std::nullopt;
    if (!ep || !f || *ep < 2 || r.experts % *ep || !(*f >= 1))
      throw bad("busiest_over_mean holds [ep, factor] pairs, ep a divisor of experts above 1, factor >= 1");
    r.busiest_over_mean.emplace_back(int(*ep), *f);
  }
  return r;
}

std::string routing_to_toml(const RoutingLoad& r) {
  if (r.experts == 0) return "";
  std::string s = fmt::format(
      "\n[routing]  # a serial run's routed rows per expert: the busiest ep rank's rows over the mean rank's\n"
      "experts = {}\ntop_k = {}\nsteps = {}\nsource = \"{}\"\nbusiest_over_mean = [",
      r.experts, r.top_k, r.steps, r.source);
  for (size_t i = 0; i < r.busiest_over_mean.size(); ++i)
    s += fmt::format("{}[{}, {:.4f}]", i ? ", " : "", r.busiest_over_mean[i].first, r.busiest_over_mean[i].second);
  return s + "]\n";
}

}  // namespace ff
