#pragma once
// Config key `zero3_gather`: the dtype ZeRO-3 all-gathers parameters in.
//   fp32 (default): the gathered values are the fp32 master weights, so a ZeRO-3 run equals the
//                   serial run of its precision (norm weights and the embedding stay fp32).
//   bf16 / fp16:    the run's 16-bit GEMM dtype (precision must be that dtype): half the bytes per
//                   gather. Every gathered parameter is then the 16-bit value, the norm weights and
//                   the embedding rows included (FSDP's MixedPrecision(param_dtype=bf16)), so the
//                   losses leave the serial bf16 run's by about bf16's rounding of those weights.
#include "train/train_config.h"

namespace ff {

// A 16-bit zero3_gather needs the precision of that dtype; throws naming both keys and the fix.
void validate_zero3_gather(const TrainConfig& c);

}  // namespace ff
