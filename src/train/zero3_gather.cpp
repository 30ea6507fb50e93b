#include "train/zero3_gather.h"

#include <stdexcept>

#include <fmt/format.h>

namespace ff {

void validate_zero3_gather(const TrainConfig& c) {
  if (c.zero3_gather == DType::f32 || c.zero3_gather == gemm_input_dtype_of(c.precision)) return;
  const char* gather = dtype_option_names().name(c.zero3_gather);
  throw std::runtime_error(fmt::format(
      "config key 'zero3_gather' = '{}' needs precision = '{}' (got '{}'): parameters are gathered in the dtype "
      "the GEMMs read; set zero3_gather = fp32",
      gather, gather, precision_name(c.precision)));
}

}  // namespace ff
