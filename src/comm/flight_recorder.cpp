#include "comm/flight_recorder.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "comm/comm.h"
#include "comm/comm_world.h"
#include "comm/nodes.h"
#include "comm/op.h"

namespace ff {

namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double wall_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

// "0, 1, 3" (fmt::join would trip GCC 12's -Wstringop-overflow in fmt 9).
std::string ranks_text(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace

FlightRecorder& FlightRecorder::instance() {
  static FlightRecorder recorder;
  return recorder;
}

uint64_t FlightRecorder::begin(CommOpKind kind, const std::vector<int>& group, uint64_t seq, uint64_t bytes,
                               std::weak_ptr<const detail::Op> op) {
  const double now = steady_s();
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  FlightEntry& e = ring_[id % kFlightEntries];
  e.id = id, e.kind = kind, e.seq = seq, e.bytes = bytes, e.start_s = now, e.end_s = 0;
  e.group = group;
  e.op = std::move(op);
  return id;
}

void FlightRecorder::end(uint64_t id) {
  const double now = steady_s();
  std::lock_guard<std::mutex> lock(mu_);
  FlightEntry& e = ring_[id % kFlightEntries];
  if (e.id == id) e.end_s = now, e.op.reset();
}

std::pair<uint64_t, double> FlightRecorder::oldest_in_flight() const {
  const double now = steady_s();
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = 0;
  double waited = 0;
  for (const FlightEntry& e : ring_)
    if (e.id != 0 && e.end_s == 0 && now - e.start_s > waited) id = e.id, waited = now - e.start_s;
  return {id, waited};
}

std::string FlightRecorder::describe(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const FlightEntry& e = ring_[id % kFlightEntries];
  if (e.id != id) return "an operation no longer in the record";
  if (auto op = e.op.lock()) return op->describe() + " #" + std::to_string(e.seq);
  return fmt::format("{} #{} on world ranks [{}]", comm_op_name(e.kind), e.seq, ranks_text(e.group));
}

std::string FlightRecorder::off_node_ranks(uint64_t id) const {
  std::vector<int> group;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const FlightEntry& e = ring_[id % kFlightEntries];
    if (e.id != id) return "";
    group = e.group;
  }
  if (!comm_available()) return "";
  return off_node_ranks_text(group, comm_world().rank(), world_rank_nodes(), node_names());
}

std::string FlightRecorder::to_json(int rank, int world_size, const std::string& reason) const {
  const double now_steady = steady_s(), now_wall = wall_s();
  auto wall = [&](double t) { return fmt::format("{:.6f}", now_wall - (now_steady - t)); };
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const FlightEntry*> used;
  for (const FlightEntry& e : ring_)
    if (e.id != 0) used.push_back(&e);
  std::sort(used.begin(), used.end(), [](auto* a, auto* b) { return a->id < b->id; });
  std::string out = fmt::format(
      "{{\"rank\": {}, \"world_size\": {}, \"reason\": \"{}\", \"dumped_at\": {:.6f}, "
      "\"ops\": [\n",
      rank, world_size, json_escape(reason), now_wall);
  for (size_t i = 0; i < used.size(); ++i) {
    const FlightEntry& e = *used[i];
    auto op = e.op.lock();
    out += fmt::format(
        "  {{\"id\": {}, \"op\": \"{}\", \"seq\": {}, \"bytes\": {}, \"group\": [{}], "
        "\"start\": {}, \"end\": {}, \"what\": \"{}\"}}{}\n",
        e.id, comm_op_name(e.kind), e.seq, e.bytes, ranks_text(e.group), wall(e.start_s),
        e.end_s == 0 ? std::string("null") : wall(e.end_s), op ? json_escape(op->describe()) : "",
        i + 1 < used.size() ? "," : "");
  }
  return out + "]}\n";
}

std::string dump_flight_record(const std::string& dump_dir, const std::string& reason) {
  const int rank = comm_available() ? comm_world().rank() : 0;
  const int size = comm_available() ? comm_world().size() : 1;
  std::error_code ec;
  std::filesystem::create_directories(dump_dir, ec);
  const std::string path =
      (std::filesystem::path(dump_dir) / ("rank_" + std::to_string(rank) + ".json")).string();
  // Plain write + rename: the job is about to end, and a reader must never see half a dump.
  {
    std::ofstream f(path + ".tmp", std::ios::trunc);
    f << FlightRecorder::instance().to_json(rank, size, reason);
  }
  std::filesystem::rename(path + ".tmp", path, ec);
  return path;
}

// ---- the watchdog ----

namespace {

struct Watchdog {
  // Destroyed at exit after main returned (or never started): the thread must be joined first.
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }
  std::mutex mu;
  std::condition_variable cv;
  std::thread thread;
  bool stop = false;
  double timeout_s = 0;
  std::string dump_dir;

  void run() {
    std::unique_lock<std::mutex> lk(mu);
    while (!stop) {
      cv.wait_for(lk, std::chrono::milliseconds(100), [&] { return stop; });
      if (stop) return;
      const auto [id, waited] = FlightRecorder::instance().oldest_in_flight();
      if (id == 0 || waited <= timeout_s) continue;
      const std::string what = FlightRecorder::instance().describe(id);
      std::string reason =
          fmt::format("{} waited {:.1f} s, past collective_timeout = {} s", what, waited, timeout_s);
      // Across nodes a dead node or a link down looks like this too: name who is elsewhere.
      const std::string elsewhere = FlightRecorder::instance().off_node_ranks(id);
      if (!elsewhere.empty()) reason += "; it waits on " + elsewhere + " (is that node up and reachable?)";
      const std::string path = dump_flight_record(dump_dir, reason);
      abort_job(
          fmt::format("{}: a peer rank is stopped, dead or waiting in another operation. This rank's last "
                      "{} communication operations are in {}; run `fivefold diagnose` on the run folder to "
                      "name the rank behind",
                      reason, kFlightEntries, path));
    }
  }
};

Watchdog& watchdog() {
  static Watchdog w;
  return w;
}

}  // namespace

void start_comm_watchdog(double timeout_s, const std::string& dump_dir) {
  Watchdog& w = watchdog();
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.timeout_s = timeout_s;
    w.dump_dir = dump_dir;
    w.stop = false;
  }
  if (!w.thread.joinable()) w.thread = std::thread([&w] { w.run(); });
}

void stop_comm_watchdog() {
  Watchdog& w = watchdog();
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.stop = true;
  }
  w.cv.notify_all();
  if (w.thread.joinable()) w.thread.join();
}

}  // namespace ff
