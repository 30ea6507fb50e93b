// Packed weights (kernels/packed_weights.h) and weight gradients split by rows (kernels/wgrad_rows.h)
// are oneDNN's bf16 paths: they run only where oneDNN multiplies the bf16 products. Not on a CPU
// where oneDNN has no bf16 matmul, and not where fivefold's tile GEMM takes the products (an AMX
// CPU by default, any CPU under FIVEFOLD_AMX_GEMM=emulate). Their tests skip there with the reason
// below; CTest's `*_onednn_bf16_paths*` entries run them again with FIVEFOLD_AMX_GEMM=off, so an
// AMX machine checks them as well.
#pragma once

#include <string>

#include "kernels/gemm.h"

namespace fftest {

// Empty where oneDNN runs the bf16 products; otherwise why it does not and `consequence` (what the
// test would have checked) follows.
inline std::string why_onednn_bf16_is_off(const std::string& consequence) {
  if (ff::gemm_on_fivefold_tiles(ff::DType::bf16))
    return "the bf16 products run on fivefold's tile GEMM here: " + consequence +
           " (CTest's *_onednn_bf16_paths* entries run this with FIVEFOLD_AMX_GEMM=off)";
  if (!ff::native_16bit_gemm(ff::DType::bf16)) return "no native bf16 GEMM here: " + consequence;
  return "";
}

}  // namespace fftest
