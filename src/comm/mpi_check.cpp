#include "comm/mpi_check.h"

#include <climits>

#include "comm/comm_world.h"

namespace ff::detail {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, size_t(len));
}

void fail_mpi(int rc, const char* call, const std::string& during) {
  abort_job(std::string(call) + " failed during " + during + ": " + mpi_error_string(rc) +
            " (a peer rank probably died or the ranks called collectives with different "
            "arguments or in a different order)");
}

int mpi_count(size_t n) {
  if (n > size_t(INT_MAX)) {
    abort_job("internal: a message of " + std::to_string(n) +
              " elements exceeds MPI's int count; the comm layer should have split it into "
              "segments (report this as a bug in src/comm)");
  }
  return int(n);
}

MPI_Datatype mpi_type(CommType t) {
  switch (t) {
    case CommType::f32: return MPI_FLOAT;
    case CommType::f64: return MPI_DOUBLE;
    case CommType::i32: return MPI_INT32_T;
    case CommType::i64: return MPI_INT64_T;
    case CommType::u8: return MPI_UINT8_T;
    case CommType::bf16:  // 16-bit floats travel as words; this layer reduces them itself
    case CommType::f16: return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

}  // namespace ff::detail
