#include "plan/engine_host.h"

#include "kernels/cpu_isa.h"
#include "kernels/gemm.h"

namespace ff {

bool EngineHost::native_16bit(Precision p) const {
  return p == Precision::bf16 ? native_bf16 : p == Precision::fp16 ? native_fp16 : false;
}

EngineHost this_engine_host(int threads, bool packed_weights) {
  EngineHost h;
  h.threads = threads;
  h.native_bf16 = native_16bit_gemm(DType::bf16);
  h.native_fp16 = native_16bit_gemm(DType::f16);
  h.packed_weights = packed_weights;
  h.tile_gemm = gemm_tiles() != GemmTiles::onednn;
  return h;
}

}  // namespace ff
