#include "kernels/gemm_context.h"

#include "kernels/gemm.h"

namespace ff {

const void* GemmContext::twin_of(const float* w, size_t n, DType t) const {
  for (const WeightTwinSource* s : twins)
    if (const void* p = s->find(w, n, t)) return p;
  return nullptr;
}

bool GemmContext::multiply_packed(const float* w, size_t n, DType t, const PackedProduct& p) const {
  // The packed copies are oneDNN's layout: the tile GEMM packs its own operands per product.
  if (!packed_weights || gemm_on_fivefold_tiles(t)) return false;
  for (const WeightTwinSource* s : twins)
    if (const void* w16 = s->find(w, n, t)) return s->multiply_packed(w16, t, p);
  return false;
}

}  // namespace ff
