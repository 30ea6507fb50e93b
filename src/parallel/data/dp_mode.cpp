#include "parallel/data/dp_mode.h"

namespace ff {

const EnumTable<DpMode>& dp_mode_names() {
  static const EnumTable<DpMode> names{{DpMode::sync, "sync", "DDP"},
                                       {DpMode::local_sgd, "local_sgd"},
                                       {DpMode::diloco, "diloco"},
                                       {DpMode::async, "async"}};
  return names;
}

const EnumTable<DType>& pseudo_grad_dtype_names() {
  static const EnumTable<DType> names = dtype_option_names().subset({DType::f32, DType::bf16});
  return names;
}

}  // namespace ff
