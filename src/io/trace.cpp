#include "io/trace.h"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/atomic_file.h"

namespace ff {

// The monotonic clock is shared by every process on a machine, so ranks' rows line up without
// any synchronisation.
double Tracer::now_us() const {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Tracer::span(const std::string& name, const std::string& track, double begin_us, double end_us) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back({name, track, begin_us, end_us});
}

std::string Tracer::events_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  // Name the process row after the rank and give each track a stable thread id.
  std::vector<std::string> tracks;
  auto tid = [&](const std::string& track) {
    for (size_t i = 0; i < tracks.size(); ++i)
      if (tracks[i] == track) return int(i);
    tracks.push_back(track);
    return int(tracks.size() - 1);
  };
  for (const Event& e : events_) {
    nlohmann::json j = {{"name", e.name}, {"cat", e.track}, {"ph", "X"}, {"pid", rank_},
                        {"tid", tid(e.track)}, {"ts", e.begin_us}, {"dur", e.end_us - e.begin_us}};
    out += (out.empty() ? "" : ",\n") + j.dump();
  }
  nlohmann::json meta = {{"name", "process_name"}, {"ph", "M"}, {"pid", rank_},
                         {"args", {{"name", "rank " + std::to_string(rank_)}}}};
  out += (out.empty() ? "" : ",\n") + meta.dump();
  for (size_t i = 0; i < tracks.size(); ++i) {
    nlohmann::json t = {{"name", "thread_name"}, {"ph", "M"}, {"pid", rank_}, {"tid", int(i)},
                        {"args", {{"name", tracks[i]}}}};
    out += ",\n" + t.dump();
  }
  return out;
}

void Tracer::write_file(const std::string& path, const std::vector<std::string>& rank_events) {
  std::string body = "{\"traceEvents\": [\n";
  for (size_t r = 0; r < rank_events.size(); ++r)
    body += rank_events[r] + (r + 1 < rank_events.size() ? ",\n" : "\n");
  body += "], \"displayTimeUnit\": \"ms\"}\n";
  write_file_atomic(path, body);
}

}  // namespace ff
