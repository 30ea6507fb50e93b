#pragma once
// The flight recorder and the hang watchdog.
//
// Every rank keeps its last kFlightEntries communication operations (op, group, sequence number,
// bytes, start and end time) in a ring. A watchdog thread, independent of MPI and of the thread
// that waits, looks at the oldest operation still in flight every 100 ms; once it has waited past
// the timeout the rank writes its ring as JSON (DIR/rank_K.json), says so, and ends the job
// (abort_job). A rank is blocked in its own operation when a peer hangs, so each live rank's own
// watchdog fires and dumps; a stopped or dead rank leaves no dump, which is itself the evidence.
// `fivefold diagnose RUN` reads the dumps.
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/comm_types.h"

namespace ff {

namespace detail {
class Op;
}

constexpr size_t kFlightEntries = 256;

struct FlightEntry {
  uint64_t id = 0;  // 1, 2, ... in this rank's launch order (0: empty slot)
  CommOpKind kind = CommOpKind::barrier;
  uint64_t seq = 0;                    // the group's collective sequence number (agrees across its ranks)
  uint64_t bytes = 0;                  // this rank's payload (CommStats' definition)
  std::vector<int> group;              // world ranks of the group
  double start_s = 0, end_s = 0;       // steady clock; end_s 0 = still in flight
  std::weak_ptr<const detail::Op> op;  // for the description while it is alive
};

class FlightRecorder {
 public:
  static FlightRecorder& instance();
  // Called where an operation is handed to the engine and where the engine retires it.
  uint64_t begin(CommOpKind kind, const std::vector<int>& group, uint64_t seq, uint64_t bytes,
                 std::weak_ptr<const detail::Op> op);
  void end(uint64_t id);
  // The ring as JSON, oldest first, with wall-clock times (comparable across ranks on one clock).
  std::string to_json(int rank, int world_size, const std::string& reason) const;
  // The in-flight operation that has waited longest: its id (0 if none) and seconds waited.
  std::pair<uint64_t, double> oldest_in_flight() const;
  std::string describe(uint64_t id) const;
  // The ranks of the operation's group on other nodes than this rank's, named by node ("" if none).
  std::string off_node_ranks(uint64_t id) const;

 private:
  mutable std::mutex mu_;
  std::array<FlightEntry, kFlightEntries> ring_;
  uint64_t next_id_ = 1;
};

// Starts (or re-aims) the watchdog: an operation in flight longer than timeout_s makes this rank
// dump its record into dump_dir/rank_K.json and end the job. Idempotent; the latest call wins.
void start_comm_watchdog(double timeout_s, const std::string& dump_dir);
// Stops and joins the watchdog thread (finalize_comm calls it before MPI_Finalize).
void stop_comm_watchdog();
// Writes this rank's record to dump_dir/rank_K.json now; returns the path.
std::string dump_flight_record(const std::string& dump_dir, const std::string& reason);

}  // namespace ff
