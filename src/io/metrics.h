#pragma once
// Training metrics as JSON Lines: one object per line, written at once, so a crashed run still
// leaves every record it produced and `tail -f` or pandas.read_json(lines=True) read it live.
//
// Each record goes out as a single append of the whole line, and a short write (a full disk) is
// cut back off, so a crash leaves at most one torn line: the last. Reopening for a resumed run
// drops that torn line before appending, so it never sits in the middle of the file.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace ff {

class MetricsWriter {
 public:
  // append = true continues the file of a resumed run (dropping a torn last line); false starts
  // it afresh. resumed_step >= 0 (with append): the step records after it are dropped too, so
  // the steps a resumed run repeats appear once; event rows ("event": "restart", which carry the
  // step the failed attempt had logged last) stay.
  explicit MetricsWriter(const std::string& path, bool append, int resumed_step = -1);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  void write(const nlohmann::json& record);
  const std::string& path() const { return path_; }
  // Bytes of a torn last line dropped when the file was reopened (0 when it ended cleanly).
  uint64_t dropped_bytes() const { return dropped_bytes_; }
  // Records dropped because their step came after resumed_step.
  int dropped_steps() const { return dropped_steps_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t dropped_bytes_ = 0;
  int dropped_steps_ = 0;
};

// The "time" of every metrics row, step records and the supervisor's restart rows alike: the wall
// clock as Unix seconds (UTC), to the microsecond.
double metrics_time_now();

// The step of the last step record in a metrics file (rows with an "event" are not steps); 0 when
// it has none or does not exist. Unparsable lines (a torn last line) are passed over.
int last_logged_step(const std::string& path);

// The last row of `event` (e.g. "stopped") whose "time" is at least `since` (Unix seconds), or
// null: how a supervisor learns what its job recorded before it ended, when the job's own output
// may have been cut off with its pipes.
nlohmann::json last_event_since(const std::string& path, const std::string& event, double since);

}  // namespace ff
