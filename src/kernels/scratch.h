#pragma once
// Internal to the kernels layer: per-thread scratch that grows to the largest request and is
// then reused, so hot kernels allocate only on their first call for a given size. It is
// counted as workspace in the memory ledger.
#include <cstddef>
#include <cstdlib>
#include <new>

#include "core/memory.h"

namespace ff::detail {

template <class T>
T* thread_scratch(size_t n) {
  struct Buffer {
    T* p = nullptr;
    size_t cap = 0;
    ~Buffer() {
      std::free(p);
      MemoryLedger::instance().sub(MemCategory::workspace, int64_t(cap * sizeof(T)));
    }
  };
  thread_local Buffer buf;  // memo: scratch every kernel writes before it reads; only its size persists
  if (n > buf.cap) {
    std::free(buf.p);
    MemoryLedger::instance().sub(MemCategory::workspace, int64_t(buf.cap * sizeof(T)));
    // 64-byte alignment keeps every tile row of a multiple-of-16 width on cache-line boundaries.
    const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    buf.p = static_cast<T*>(std::aligned_alloc(64, bytes));
    if (!buf.p) throw std::bad_alloc();
    buf.cap = n;
    // Accounted like every other buffer, so the memory table shows the kernels' scratch too.
    MemoryLedger::instance().add(MemCategory::workspace, int64_t(n * sizeof(T)));
  }
  return buf.p;
}

}  // namespace ff::detail
