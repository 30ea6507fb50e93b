#include "plan/dp_overlap.h"

#include <algorithm>

namespace ff {

double ddp_exposed(const std::vector<SegmentComm>& segments, double backward) {
  double made = 0, link = 0;
  for (auto s = segments.rbegin(); s != segments.rend(); ++s) {
    made += backward * s->share;
    link = std::max(link, made) + s->all_reduce;
  }
  return std::max(0.0, link - backward);
}

double zero_exposed(const std::vector<SegmentComm>& segments, double forward, double backward, bool gather_params,
                    bool reduce_grads) {
  const size_t n = segments.size();
  if (n == 0) return 0;
  std::vector<double> gathered(n, 0);  // when each segment's parameters are whole on this rank
  double link = 0, compute = 0;
  auto gather = [&](size_t k, double asked) {
    if (gather_params) link = std::max(link, asked) + segments[k].all_gather;
    gathered[k] = gather_params ? link : 0;
  };
  gather(0, 0);
  for (size_t k = 0; k < n; ++k) {  // forward: segment k computes while k + 1 is gathered
    const double start = std::max(compute, gathered[k]);
    if (k + 1 < n) gather(k + 1, start);
    compute = start + forward * segments[k].share;
  }
  gather(n - 1, compute);
  for (size_t j = n; j-- > 0;) {  // backward, in reverse
    const double start = std::max(compute, gathered[j]);
    if (j > 0) gather(j - 1, start);
    compute = start + backward * segments[j].share;
    if (reduce_grads) link = std::max(link, compute) + segments[j].reduce_scatter;
  }
  return std::max(compute, link) - (forward + backward);
}

}  // namespace ff
