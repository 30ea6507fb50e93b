#include "model/precision.h"

namespace ff {

const EnumTable<Precision>& precision_names() {
  static const EnumTable<Precision> names{{Precision::fp32, "fp32"},
                                          {Precision::bf16, "bf16"},
                                          {Precision::fp16, "fp16"},
                                          {Precision::fp8, "fp8", "experimental, emulated"}};
  return names;
}

DType gemm_input_dtype_of(Precision p) {
  switch (p) {
    case Precision::bf16: return DType::bf16;
    case Precision::fp16: return DType::f16;
    default: return DType::f32;
  }
}

}  // namespace ff
