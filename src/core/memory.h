#pragma once
// Memory accounting by category. Every large buffer the engine owns is a TrackedBuffer, so the
// table printed after training is the real footprint, not an estimate.
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "core/dtype.h"

namespace ff {

enum class MemCategory : int { params = 0, grads, optimizer, activations, workspace, count };
constexpr int kMemCategories = int(MemCategory::count);
const char* mem_category_name(MemCategory c);

struct MemorySnapshot {
  std::array<int64_t, kMemCategories> current{};
  std::array<int64_t, kMemCategories> peak{};
  int64_t total_current = 0;
  int64_t total_peak = 0;  // peak of the sum, not the sum of peaks
};

// One ledger per process (a rank is a process). Thread-safe: kernels grow per-thread scratch
// inside parallel regions (rarely: only when a larger size is first asked for).
class MemoryLedger {
 public:
  static MemoryLedger& instance();
  void add(MemCategory c, int64_t bytes);
  void sub(MemCategory c, int64_t bytes);
  MemorySnapshot snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return snap_;
  }
  void reset_peaks();
  std::string table() const;  // human-readable, one row per category

 private:
  mutable std::mutex mu_;
  MemorySnapshot snap_;
};

// 64-byte aligned, zero-initialised, accounted storage for n elements of T.
template <typename T>
class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  TrackedBuffer(size_t n, MemCategory c) { allocate(n, c); }
  ~TrackedBuffer() { release(); }
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;
  TrackedBuffer(TrackedBuffer&& o) noexcept { *this = std::move(o); }
  TrackedBuffer& operator=(TrackedBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      cat_ = o.cat_;
    }
    return *this;
  }

  void allocate(size_t n, MemCategory c);
  void release();
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  size_t bytes() const { return size_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  MemCategory cat_ = MemCategory::workspace;
};

void* aligned_zeroed_alloc(size_t bytes);
void aligned_free(void* p);

template <typename T>
void TrackedBuffer<T>::allocate(size_t n, MemCategory c) {
  release();
  data_ = static_cast<T*>(aligned_zeroed_alloc(n * sizeof(T)));
  size_ = n;
  cat_ = c;
  MemoryLedger::instance().add(c, int64_t(n * sizeof(T)));
}

template <typename T>
void TrackedBuffer<T>::release() {
  if (!data_) return;
  MemoryLedger::instance().sub(cat_, int64_t(size_ * sizeof(T)));
  aligned_free(data_);
  data_ = nullptr;
  size_ = 0;
}

// Accounted storage whose element type is chosen at run time: a parameter group's working copy,
// a gradient buffer or an activation may be f32 or 16-bit by configuration.
class TypedBuffer {
 public:
  TypedBuffer() = default;
  TypedBuffer(size_t n, DType t, MemCategory c) { allocate(n, t, c); }
  void allocate(size_t n, DType t, MemCategory c) {
    bytes_.allocate(n * dtype_size(t), c);
    dtype_ = t;
    size_ = n;
  }
  void release() { bytes_.release(), size_ = 0; }
  TypedPtr ptr() { return {bytes_.data(), dtype_}; }
  ConstTypedPtr ptr() const { return {bytes_.data(), dtype_}; }
  DType dtype() const { return dtype_; }
  size_t size() const { return size_; }
  size_t bytes() const { return bytes_.bytes(); }

 private:
  TrackedBuffer<unsigned char> bytes_;
  DType dtype_ = DType::f32;
  size_t size_ = 0;
};

std::string format_bytes(int64_t bytes);

}  // namespace ff
