#pragma once
// Shared by the kernel tests: seeded inputs, float/double conversion, and the central-difference
// gradient check that every backward is held to.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace fftest {

inline std::vector<double> randn(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> x(n);
  for (auto& v : x) v = dist(gen);
  return x;
}

inline std::vector<float> to_float(const std::vector<double>& x) {
  return std::vector<float>(x.begin(), x.end());
}

// Largest |a - b| relative to the largest |b|: one number per tensor, robust to entries near 0.
template <class A>
double max_rel_err(const std::vector<A>& a, const std::vector<double>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(a[i]) - b[i]));
    ref = std::max(ref, std::abs(b[i]));
  }
  return err / std::max(ref, 1e-300);
}

// Sets the OpenMP thread count for a scope. The finite-difference loops call tiny forwards
// thousands of times; on a loaded machine every parallel region can wait a scheduler slice for
// its second thread, so they run on one (the kernels give the same result for any count).
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ScopedThreads() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

// Checks grad[i] against (loss(x + h e_i) - loss(x - h e_i)) / 2h for up to max_checks indices
// spread evenly over x. With h = 1e-5 in double the difference quotient is good to ~1e-10
// (truncation h^2, rounding 1e-16/h), so rtol 1e-6 fails on any real error in a backward.
inline void expect_matches_fd(std::vector<double>& x, const std::vector<double>& grad,
                              const std::function<double()>& loss, const char* what,
                              size_t max_checks = 400, double h = 1e-5, double rtol = 1e-6,
                              double atol = 1e-8) {
  ASSERT_EQ(x.size(), grad.size()) << what;
  const ScopedThreads serial(1);
  const size_t step = std::max<size_t>(1, x.size() / max_checks);
  size_t checked = 0;
  for (size_t i = 0; i < x.size(); i += step, ++checked) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = loss();
    x[i] = keep - h;
    const double down = loss();
    x[i] = keep;
    const double fd = (up - down) / (2 * h);
    ASSERT_NEAR(grad[i], fd, atol + rtol * std::abs(fd)) << what << " index " << i;
  }
  EXPECT_GT(checked, 0u) << what;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace fftest
