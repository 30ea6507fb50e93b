#include "train/fp8_tensor_ids.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace ff {

Fp8TensorIds::Fp8TensorIds(const ParamLayout& local, const ParamLayout& whole) : local_total_(local.total()) {
  std::map<std::string, int64_t> index;
  for (const ParamView& v : whole.views()) {
    index.emplace(v.name, int64_t(names_.size()));
    names_.push_back(v.name);
  }
  for (const ParamView& v : local.views()) {
    auto it = index.find(v.name);
    if (it == index.end())
      throw std::logic_error("fp8 tensor ids: '" + v.name + "' is not in the whole model");
    starts_.emplace_back(v.offset, it->second);
  }
  std::sort(starts_.begin(), starts_.end());
}

int64_t Fp8TensorIds::id_of_name(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  return it == names_.end() ? -1 : int64_t(it - names_.begin());
}

int64_t Fp8TensorIds::id_at(int64_t at) const {
  if (at >= 0 && size_t(at) < local_total_) {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), std::make_pair(size_t(at), INT64_MAX));
    if (it != starts_.begin()) return std::prev(it)->second;
  }
  throw std::logic_error("fp8: a GEMM's weight at element " + std::to_string(at) +
                         " is no parameter of the model's layout (a GEMM outside the model's linear layers "
                         "was handed the run's fp8 recipe)");
}

}  // namespace ff
