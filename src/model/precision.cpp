#include "model/precision.h"

#include <stdexcept>

namespace ff {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "bf16") return Precision::bf16;
  if (s == "fp16") return Precision::fp16;
  if (s == "fp8") return Precision::fp8;
  throw std::invalid_argument("unknown precision '" + s + "'; use fp32, bf16, fp16 or fp8 (experimental)");
}

DType gemm_input_dtype_of(Precision p) {
  switch (p) {
    case Precision::bf16: return DType::bf16;
    case Precision::fp16: return DType::f16;
    default: return DType::f32;
  }
}

}  // namespace ff
