#include "comm/mpi_native.h"

#include "comm/comm_state.h"
#include "comm/engine.h"

namespace ff {
namespace detail {
struct NativeAccess {
  static MPI_Comm handle(const Comm& c) { return c.state().comm; }
};
}  // namespace detail

void with_native_comm(const Comm& comm, const std::function<void(MPI_Comm)>& f) {
  MPI_Comm handle = detail::NativeAccess::handle(comm);
  detail::Engine::instance().with_token([&] { f(handle); });
}

}  // namespace ff
