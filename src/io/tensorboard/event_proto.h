#pragma once
// The few TensorBoard `Event` messages fivefold writes, in protobuf's wire format, encoded by
// hand (no protobuf library): the field numbers are those of tensorflow/core/util/event.proto
// and summary.proto, which TensorBoard reads.
//   Event      { double wall_time = 1; int64 step = 2; string file_version = 3;
//                Summary summary = 5; SessionLog session_log = 7; }
//   Summary    { repeated Value value = 1; }
//   Value      { string tag = 1; float simple_value = 2; TensorProto tensor = 8;
//                SummaryMetadata metadata = 9; }
//   SummaryMetadata { PluginData plugin_data = 1; }   PluginData { string plugin_name = 1; }
//   TensorProto { DataType dtype = 1; repeated bytes string_val = 8; }   // DT_STRING = 7
//   SessionLog { SessionStatus status = 1; }   // START = 1
#include <cstdint>
#include <string>
#include <vector>

namespace ff {

struct TensorBoardScalar {
  std::string tag;   // "train/loss": TensorBoard groups the charts by the part before the '/'
  float value;
};

// The first record of every event file: file_version "brain.Event:2".
std::string encode_file_version_event(double wall_time);

// One step's scalars as one event (one Summary with a value per scalar).
std::string encode_scalars_event(double wall_time, int64_t step, const std::vector<TensorBoardScalar>& scalars);

// A text summary (TensorBoard's Text tab renders it as Markdown) under `tag` at `step`: one
// DT_STRING scalar tensor tagged for the "text" plugin.
std::string encode_text_event(double wall_time, int64_t step, const std::string& tag, const std::string& markdown);

// SessionLog START at `step`: TensorBoard drops the events an earlier run logged at this step and
// after, which a resumed run logs again.
std::string encode_session_start_event(double wall_time, int64_t step);

}  // namespace ff
