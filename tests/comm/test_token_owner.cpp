// The MPI token's holder was a thread_local bool that CommState's destructor wrote; communicators
// are freed from destructors that run late (a thread's teardown, exit), where the sanitizer saw
// that thread_local's address as null. The holder is now an atomic thread id in the engine. This
// frees a communicator from a thread's TLS teardown and checks that the engine still works after it
// (every rank goes on to a collective, so a token left held would hang). In a plain build the old
// code passed it too; the sanitizer job's 2-rank train runs take the exit path.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "comm/comm.h"
#include "comm/comm_world.h"

using namespace ff;

namespace {
thread_local std::unique_ptr<Comm> kept_until_thread_exit;
}

TEST(TokenOwner, CommFreedDuringAThreadsTeardown) {
  Comm& w = comm_world();
  auto c = std::make_unique<Comm>(w.split(0, w.rank()));
  std::thread t([&c] { kept_until_thread_exit = std::move(c); });  // freed by the thread's TLS destructor
  t.join();
  int x = 1;
  w.all_reduce(&x, 1);
  EXPECT_EQ(x, w.size());
}
