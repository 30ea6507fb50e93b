#include "plan/rate_curve.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ff {

double RateCurve::at(double x) const {
  if (points.empty()) return 0;
  if (x <= points.front().first) return points.front().second;
  if (x >= points.back().first) return points.back().second;
  size_t i = 1;
  while (points[i].first < x) ++i;
  const auto [x0, y0] = points[i - 1];
  const auto [x1, y1] = points[i];
  const double f = std::log(x / x0) / std::log(x1 / x0);
  return std::exp(std::log(y0) + f * (std::log(y1) - std::log(y0)));
}

RateCurve read_rate_curve(const toml::node* n, const std::string& path, const char* key) {
  RateCurve c;
  if (!n) return c;
  const auto* arr = n->as_array();
  auto bad = [&] {
    return std::runtime_error(fmt::format("cluster file '{}': [rates] {} is a list of [x, value] pairs with x "
                                          "ascending and value > 0, e.g. [[64, 1e9], [256, 3e9]]",
                                          path, key));
  };
  if (!arr) throw bad();
  for (const toml::node& p : *arr) {
    const auto* pair = p.as_array();
    if (!pair || pair->size() != 2) throw bad();
    const auto x = pair->get(0)->value<double>(), y = pair->get(1)->value<double>();
    if (!x || !y || !(*y > 0) || (!c.points.empty() && *x <= c.points.back().first)) throw bad();
    c.points.emplace_back(*x, *y);
  }
  return c;
}

std::string rate_curve_toml(const char* key, const RateCurve& c) {
  std::string s = fmt::format("{} = [", key);
  for (size_t i = 0; i < c.points.size(); ++i)
    s += fmt::format("{}[{:.6g}, {:.6g}]", i ? ", " : "", c.points[i].first, c.points[i].second);
  return s + "]\n";
}

}  // namespace ff
