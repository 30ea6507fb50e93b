#include "train/zero3_gather.h"

#include <stdexcept>
#include <string>

namespace ff {

DType zero3_gather_dtype(const TrainConfig& c) {
  if (c.zero3_gather == "fp32") return DType::f32;
  if (c.zero3_gather != "bf16" && c.zero3_gather != "fp16")
    throw std::runtime_error("config key 'zero3_gather' is '" + c.zero3_gather + "'; use fp32, bf16 or fp16");
  if (c.precision != c.zero3_gather)
    throw std::runtime_error(
        "config key 'zero3_gather' = '" + c.zero3_gather + "' needs precision = '" + c.zero3_gather +
        "' (got '" + c.precision +
        "'): parameters are gathered in the dtype the GEMMs read; set zero3_gather = fp32");
  return c.zero3_gather == "bf16" ? DType::bf16 : DType::f16;
}

}  // namespace ff
