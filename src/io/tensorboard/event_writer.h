#pragma once
// A TensorBoard event file: `tensorboard --logdir DIR` (or any folder above DIR) plots what it
// holds, live. One record per step, appended whole and handed to the kernel at once (no buffer
// of ours), so a crash loses at most the last record, torn, which TensorBoard's reader skips.
#include <cstdint>
#include <string>
#include <vector>

#include "io/tensorboard/event_proto.h"

namespace ff {

class EventFileWriter {
 public:
  // Creates DIR/events.out.tfevents.<unix seconds>.<hostname> (the name TensorBoard's loader and
  // TensorFlow's writer use; ".1", ".2"... appended when a file of that second exists, as after
  // a resume within the same second) and writes the file_version record. A resumed run gets a new
  // file: TensorBoard reads every event file of a folder as one run, in name order.
  explicit EventFileWriter(const std::string& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // wall_time: the Unix seconds the event carries (a metrics row's "time", so both files agree);
  // 0 means now.
  void write_scalars(int64_t step, const std::vector<TensorBoardScalar>& scalars, double wall_time = 0);
  void write_text(int64_t step, const std::string& tag, const std::string& markdown);
  // A resumed run's first step: TensorBoard drops the earlier files' events from `step` on.
  void write_session_start(int64_t step);
  const std::string& path() const { return path_; }

 private:
  void append(const std::string& payload);
  std::string path_;
  int fd_ = -1;
};

}  // namespace ff
