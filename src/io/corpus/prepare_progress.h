#pragma once
// prepare's progress line on stderr, redrawn in place at most twice a second when stderr is a
// terminal (a log file gets only the summary the caller prints): bytes read of the total,
// documents, tokens, MB/s, ETA and the bad records skipped so far.
#include <chrono>
#include <cstdint>

namespace ff {

class PrepareProgress {
 public:
  PrepareProgress(bool enabled, uint64_t total_file_bytes);
  void update(uint64_t file_bytes, uint64_t documents, uint64_t tokens, uint64_t bad_records);
  // Ends the redrawn line so what follows starts on its own.
  void finish();
  double seconds() const;

 private:
  bool enabled_;
  uint64_t total_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace ff
