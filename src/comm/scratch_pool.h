#pragma once
// Internal: reusable receive buffers for reductions. Allocating a fresh 256 KiB buffer per
// collective would mmap/munmap and page-fault on every call (tens of microseconds, as much as
// a whole small all-reduce), so buffers are kept and handed out again. Used only by the thread
// holding the MPI token, hence no lock.
#include <cstddef>
#include <memory>
#include <vector>

namespace ff::detail {

class ScratchPool {
 public:
  std::byte* take(size_t bytes);
  void give(std::byte* buffer);
  void clear();
  size_t bytes_held() const;

 private:
  struct Buffer {
    size_t bytes;
    std::unique_ptr<std::byte[]> data;
  };
  std::vector<Buffer> free_;
  std::vector<Buffer> lent_;
};

}  // namespace ff::detail
