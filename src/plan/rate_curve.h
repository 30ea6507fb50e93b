#pragma once
// A measured curve the planner interpolates (plan/cost_rates.h, plan/thread_scaling.h), and its
// form in a cluster file's [rates] table.
#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

namespace ff {

// A piecewise log-log curve: y(x) through measured (x, y) points, flat beyond the ends.
struct RateCurve {
  std::vector<std::pair<double, double>> points;  // ascending x
  double at(double x) const;
  bool empty() const { return points.empty(); }
};

// `key = [[x, y], ...]` of [rates] (null node: an empty curve); throws naming the file and key
// unless x ascends and every y > 0.
RateCurve read_rate_curve(const toml::node* n, const std::string& path, const char* key);
std::string rate_curve_toml(const char* key, const RateCurve& c);

}  // namespace ff
