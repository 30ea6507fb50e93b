#include "comm/op.h"

namespace ff::detail {

std::string Op::describe() const {
  return std::string(comm_op_name(kind_)) + " on a group of " + std::to_string(comm_->size);
}

}  // namespace ff::detail
