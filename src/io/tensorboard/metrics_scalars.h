#pragma once
// The TensorBoard scalars of one metrics.jsonl step record, taken from the record itself so the
// two files can never disagree (TensorBoard stores float32: each value is the float32 of the
// record's number). Tags group the charts:
//   train/loss, train/lr, train/grad_norm, train/loss_scale (fp16), val/loss (evaluated steps),
//   perf/tokens_per_s, perf/mfu, perf/gemm_ceiling_share, perf/step_seconds,
//   memory/<ledger category>_mib and memory/peak_total_mib (the record's "bytes" / 2^20).
// A key the record lacks gives no scalar; a null (a non-finite number in JSON) gives NaN.
#include <nlohmann/json.hpp>
#include <vector>

#include "io/tensorboard/event_proto.h"

namespace ff {

std::vector<TensorBoardScalar> tensorboard_scalars(const nlohmann::json& metrics_record);

}  // namespace ff
