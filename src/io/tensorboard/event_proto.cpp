#include "io/tensorboard/event_proto.h"

#include <cstring>
#include <string_view>

namespace ff {

namespace {

// Wire types of the protobuf encoding.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(uint8_t(v)));
}

void put_key(std::string& out, uint32_t field, uint32_t wire_type) { put_varint(out, (field << 3) | wire_type); }

// Little-endian, as protobuf's fixed-width fields are on every machine.
template <typename T>
void put_fixed(std::string& out, uint32_t field, uint32_t wire_type, T v) {
  put_key(out, field, wire_type);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// Event's wall_time and step, the fields every event carries.
std::string event_header(double wall_time, int64_t step) {
  std::string out;
  put_fixed<double>(out, 1, kFixed64, wall_time);
  // int64 as a varint of its two's complement (a negative step would take 10 bytes).
  if (step != 0) {
    put_key(out, 2, kVarint);
    put_varint(out, uint64_t(step));
  }
  return out;
}

}  // namespace

std::string encode_file_version_event(double wall_time) {
  std::string out = event_header(wall_time, 0);
  put_bytes(out, 3, "brain.Event:2");
  return out;
}

std::string encode_scalars_event(double wall_time, int64_t step, const std::vector<TensorBoardScalar>& scalars) {
  std::string summary;
  for (const TensorBoardScalar& s : scalars) {
    std::string value;
    put_bytes(value, 1, s.tag);
    put_fixed<float>(value, 2, kFixed32, s.value);
    put_bytes(summary, 1, value);
  }
  std::string out = event_header(wall_time, step);
  put_bytes(out, 5, summary);
  return out;
}

std::string encode_text_event(double wall_time, int64_t step, const std::string& tag, const std::string& markdown) {
  constexpr uint64_t kDtString = 7;
  std::string plugin_data, metadata, tensor, value, summary;
  put_bytes(plugin_data, 1, "text");
  put_bytes(metadata, 1, plugin_data);
  put_key(tensor, 1, kVarint);
  put_varint(tensor, kDtString);
  put_bytes(tensor, 8, markdown);  // no tensor_shape: a scalar
  put_bytes(value, 1, tag);
  put_bytes(value, 8, tensor);
  put_bytes(value, 9, metadata);
  put_bytes(summary, 1, value);
  std::string out = event_header(wall_time, step);
  put_bytes(out, 5, summary);
  return out;
}

std::string encode_session_start_event(double wall_time, int64_t step) {
  constexpr uint64_t kStart = 1;
  std::string session_log;
  put_key(session_log, 1, kVarint);
  put_varint(session_log, kStart);
  std::string out = event_header(wall_time, step);
  put_bytes(out, 7, session_log);
  return out;
}

}  // namespace ff
