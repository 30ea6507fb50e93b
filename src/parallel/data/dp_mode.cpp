#include "parallel/data/dp_mode.h"

#include <stdexcept>

namespace ff {

DpMode parse_dp_mode(const std::string& s) {
  if (s == "sync") return DpMode::sync;
  if (s == "local_sgd") return DpMode::local_sgd;
  if (s == "diloco") return DpMode::diloco;
  if (s == "async") return DpMode::async;
  throw std::runtime_error("dp_mode must be sync | local_sgd | diloco | async (got '" + s + "')");
}

const char* dp_mode_name(DpMode m) {
  switch (m) {
    case DpMode::sync: return "sync";
    case DpMode::local_sgd: return "local_sgd";
    case DpMode::diloco: return "diloco";
    case DpMode::async: return "async";
  }
  return "?";
}

DType parse_pseudo_grad_dtype(const std::string& s) {
  if (s == "fp32") return DType::f32;
  if (s == "bf16") return DType::bf16;
  throw std::runtime_error("diloco_pseudo_grad_dtype must be fp32 | bf16 (got '" + s + "')");
}

}  // namespace ff
