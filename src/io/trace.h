#pragma once
// A per-rank timeline in Chrome's trace-event JSON (open it in Perfetto or chrome://tracing).
// Spans are recorded from any thread into a mutex-guarded list; the cost is one clock read and
// one push per span, so it can stay on in benchmarks.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ff {

class Tracer {
 public:
  explicit Tracer(int rank) : rank_(rank) {}
  double now_us() const;
  // A finished span on `track` (one row in the viewer: "compute", "comm", ...).
  void span(const std::string& name, const std::string& track, double begin_us, double end_us);
  // This rank's events as a JSON array body (no brackets), for merging across ranks.
  std::string events_json() const;
  // Writes a complete trace file from the event bodies of every rank.
  static void write_file(const std::string& path, const std::vector<std::string>& rank_events);

 private:
  struct Event {
    std::string name, track;
    double begin_us, end_us;
  };
  int rank_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

// RAII span on the calling thread; a null tracer makes it free.
class TraceScope {
 public:
  TraceScope(Tracer* t, std::string name, std::string track)
      : t_(t), name_(std::move(name)), track_(std::move(track)), begin_(t ? t->now_us() : 0) {}
  ~TraceScope() {
    if (t_) t_->span(name_, track_, begin_, t_->now_us());
  }

 private:
  Tracer* t_;
  std::string name_, track_;
  double begin_;
};

}  // namespace ff
