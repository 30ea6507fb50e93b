#include "parallel/grad_wire.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/convert.h"

namespace ff {

const EnumTable<DType>& grad_reduce_dtype_names() {
  static const EnumTable<DType> names = dtype_option_names().subset({DType::f32, DType::bf16});
  return names;
}

GradWire::GradWire(DType wire, size_t n, MemCategory c) {
  if (wire == DType::f32) return;
  if (wire != DType::bf16)
    throw std::invalid_argument(std::string("gradients travel in fp32 or bf16, not ") + dtype_name(wire));
  words_.allocate(std::max<size_t>(n, 1), c);
}

void GradWire::round_in(const float* src, size_t at, size_t n) {
  convert_from_f32(TypedPtr(words_.data() + at, DType::bf16), src, n);
}

void GradWire::widen_out(float* dst, size_t at, size_t n) const {
  convert_to_f32(dst, ConstTypedPtr(words_.data() + at, DType::bf16), n);
}

}  // namespace ff
