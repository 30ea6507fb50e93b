// main() of the MPI test suite: every rank runs every test (the collectives need them all),
// rank 0 prints the normal gtest report, other ranks print only their failures prefixed with
// their rank, and the exit code is non-zero if any rank failed.
#include <gtest/gtest.h>

#include <cstdio>

#include "comm/comm.h"
#include "comm/comm_world.h"

namespace {

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "rank %d: %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ff::CommSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  ff::Comm& world = ff::comm_world();
  // A test that fails on one rank may leave the others inside a collective it skipped; the
  // watchdog turns that hang into an abort that names the operation.
  world.set_options({.timeout_s = 60});
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (world.rank() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(world.rank()));
  }
  int32_t failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  world.all_reduce(&failed, 1, ff::ReduceOp::max);
  if (failed && world.rank() == 0) std::fprintf(stderr, "FAILED on at least one of %d ranks\n", world.size());
  return failed;
}
