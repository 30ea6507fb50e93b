#include "io/corpus/prepare_progress.h"

#include <cstdio>

namespace ff {

PrepareProgress::PrepareProgress(bool enabled, uint64_t total_file_bytes)
    : enabled_(enabled), total_(total_file_bytes), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

double PrepareProgress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void PrepareProgress::update(uint64_t file_bytes, uint64_t documents, uint64_t tokens, uint64_t bad_records) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(500)) return;
  last_draw_ = now;
  const double s = seconds(), mb = double(file_bytes) / 1e6;
  const double rate = s > 0 ? mb / s : 0;
  const double left = rate > 0 && total_ > file_bytes ? double(total_ - file_bytes) / 1e6 / rate : 0;
  std::fprintf(stderr,
               "\rprepare: %.1f / %.1f MB (%.0f%%), %llu documents, %.1fM tokens, %.1f MB/s, ETA %d:%02d",
               mb, double(total_) / 1e6, total_ ? 100.0 * double(file_bytes) / double(total_) : 100.0,
               (unsigned long long)documents, double(tokens) / 1e6, rate, int(left) / 60, int(left) % 60);
  if (bad_records) std::fprintf(stderr, ", %llu bad records skipped", (unsigned long long)bad_records);
  std::fprintf(stderr, "   ");
  std::fflush(stderr);
  drawn_ = true;
}

void PrepareProgress::finish() {
  if (drawn_) std::fputc('\n', stderr);
  drawn_ = false;
}

}  // namespace ff
