#include "core/memory.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>

namespace ff {

const char* mem_category_name(MemCategory c) {
  static const char* names[] = {"params", "grads", "optimizer", "activations", "workspace"};
  return names[int(c)];
}

MemoryLedger& MemoryLedger::instance() {
  static MemoryLedger ledger;
  return ledger;
}

void MemoryLedger::add(MemCategory c, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  int i = int(c);
  snap_.current[i] += bytes;
  if (snap_.current[i] > snap_.peak[i]) snap_.peak[i] = snap_.current[i];
  snap_.total_current += bytes;
  if (snap_.total_current > snap_.total_peak) snap_.total_peak = snap_.total_current;
}

void MemoryLedger::sub(MemCategory c, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  snap_.current[int(c)] -= bytes;
  snap_.total_current -= bytes;
}

void MemoryLedger::reset_peaks() {
  std::lock_guard<std::mutex> lock(mu_);
  snap_.peak = snap_.current;
  snap_.total_peak = snap_.total_current;
}

std::string format_bytes(int64_t bytes) {
  double b = double(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", bytes);
}

std::string MemoryLedger::table() const {
  const MemorySnapshot snap_ = snapshot();
  std::string out = fmt::format("{:<12} {:>12} {:>12}\n", "memory", "current", "peak");
  for (int i = 0; i < kMemCategories; ++i)
    out += fmt::format("{:<12} {:>12} {:>12}\n", mem_category_name(MemCategory(i)),
                       format_bytes(snap_.current[i]), format_bytes(snap_.peak[i]));
  out += fmt::format("{:<12} {:>12} {:>12}\n", "total", format_bytes(snap_.total_current),
                     format_bytes(snap_.total_peak));
  return out;
}

void* aligned_zeroed_alloc(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return p;
}

void aligned_free(void* p) { std::free(p); }

}  // namespace ff
