#include "io/tensorboard/metrics_scalars.h"

#include <cmath>
#include <string>

namespace ff {

namespace {

struct TagOf {
  const char* key;  // in the metrics record
  const char* tag;  // in TensorBoard
};

constexpr TagOf kTags[] = {
    {"loss", "train/loss"},
    {"lr", "train/lr"},
    {"grad_norm", "train/grad_norm"},
    {"loss_scale", "train/loss_scale"},
    {"val_loss", "val/loss"},
    {"tokens_per_s", "perf/tokens_per_s"},
    {"mfu", "perf/mfu"},
    {"gemm_ceiling_share", "perf/gemm_ceiling_share"},
    {"step_seconds", "perf/step_seconds"},
};

// nlohmann writes a NaN or infinity as null; TensorBoard can plot the NaN.
float as_float(const nlohmann::json& v) { return v.is_number() ? float(v.get<double>()) : NAN; }

}  // namespace

std::vector<TensorBoardScalar> tensorboard_scalars(const nlohmann::json& metrics_record) {
  std::vector<TensorBoardScalar> out;
  for (const TagOf& t : kTags)
    if (metrics_record.contains(t.key)) out.push_back({t.tag, as_float(metrics_record[t.key])});
  if (metrics_record.contains("bytes"))
    for (const auto& [category, bytes] : metrics_record["bytes"].items())
      out.push_back({"memory/" + category + "_mib", bytes.is_number() ? float(bytes.get<double>() / 1048576.0) : NAN});
  return out;
}

}  // namespace ff
