#pragma once
// The training precision (config key `precision`). fp32: everything fp32 (the default, bitwise
// the runs before mixed precision existed). bf16: GEMM inputs rounded to bf16, fp32 accumulation;
// norms, softmax, RoPE and the loss fp32; fp32 master weights, gradients and AdamW moments.
// fp16: the same with fp16 GEMM inputs, plus dynamic loss scaling (train/loss_scaler.h).
// fp8 (experimental): GEMM inputs fake-quantised to e4m3 / e5m2 (kernels/gemm_precision.h).
#include "core/dtype.h"
#include "core/enum_table.h"

namespace ff {

enum class Precision { fp32, bf16, fp16, fp8 };

const EnumTable<Precision>& precision_names();
inline const char* precision_name(Precision p) { return precision_names().name(p); }
// The element type the model's GEMMs read their inputs in.
DType gemm_input_dtype_of(Precision p);

}  // namespace ff
