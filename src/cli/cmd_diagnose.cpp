// fivefold diagnose RUN: reads the flight records the hang watchdog left in RUN/flight/ and names
// the rank(s) behind and the operation they did not reach or called differently.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"

namespace ff::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct RankRecord {
  int rank = 0;
  std::string reason;
  double dumped_at = 0;
  std::vector<json> ops;        // oldest first
  const json* stuck = nullptr;  // its oldest operation still in flight
};

std::string group_text(const json& g) {
  std::string out = "[";
  for (int r : g.get<std::vector<int>>()) out += (out.size() > 1 ? ", " : "") + std::to_string(r);
  return out + "]";
}

std::string op_text(const json& op) {
  const std::string what = op.value("what", "");
  return fmt::format("{} #{} on world ranks {}{}", op["op"].get<std::string>(), op["seq"].get<uint64_t>(),
                     group_text(op["group"]), what.empty() ? "" : " (" + what + ")");
}

std::map<int, RankRecord> read_records(const fs::path& dir) {
  std::map<int, RankRecord> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank_", 0) != 0 || entry.path().extension() != ".json") continue;
    std::ifstream f(entry.path());
    json j = json::parse(f, nullptr, false);
    if (j.is_discarded() || !j.contains("rank") || !j.contains("ops"))
      throw std::runtime_error(fmt::format("flight record '{}' is not a watchdog dump (damaged?); delete it",
                                           entry.path().string()));
    RankRecord r;
    r.rank = j["rank"].get<int>();
    r.reason = j.value("reason", "");
    r.dumped_at = j.value("dumped_at", 0.0);
    r.ops = j["ops"].get<std::vector<json>>();
    out[r.rank] = std::move(r);
  }
  return out;
}

}  // namespace

int cmd_diagnose(int argc, char** argv) {
  const char* usage = "fivefold diagnose RUN   (the run folder of a job the hang watchdog ended)";
  if (argc < 3 || std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h")
    return std::puts(usage), argc < 3 ? 2 : 0;
  const fs::path dir = fs::path(argv[2]) / "flight";
  if (!fs::is_directory(dir))
    throw std::runtime_error(
        fmt::format("'{}' holds no flight records: the watchdog writes them when a "
                    "communication waits past collective_timeout; is '{}' the run folder?",
                    dir.string(), argv[2]));
  std::map<int, RankRecord> recs = read_records(dir);
  if (recs.empty()) throw std::runtime_error(fmt::format("no rank_K.json in '{}'", dir.string()));
  // Only the latest hang: dumps older than the newest by more than a minute are from an earlier one.
  double newest = 0;
  for (auto& [rank, r] : recs) newest = std::max(newest, r.dumped_at);
  for (auto it = recs.begin(); it != recs.end();)
    it = newest - it->second.dumped_at > 60 ? recs.erase(it) : ++it;

  int world = 0;
  for (auto& [rank, r] : recs) {
    for (const json& op : r.ops) {
      for (int m : op["group"].get<std::vector<int>>()) world = std::max(world, m + 1);
      if (!r.stuck && op["end"].is_null()) r.stuck = &op;
    }
  }
  std::printf("flight records of the hang in %s: rank(s)", dir.string().c_str());
  for (auto& [rank, r] : recs) std::printf(" %d", rank);
  std::printf("\n");
  std::set<int> behind;
  std::vector<std::string> findings;
  for (auto& [rank, r] : recs) {
    if (!r.stuck) {
      std::printf("rank %d: nothing in flight (%s)\n", rank, r.reason.c_str());
      continue;
    }
    const json& op = *r.stuck;
    std::printf("rank %d waits in %s\n", rank, op_text(op).c_str());
    const uint64_t seq = op["seq"].get<uint64_t>();
    for (int peer : op["group"].get<std::vector<int>>()) {
      if (peer == rank) continue;
      auto it = recs.find(peer);
      if (it == recs.end()) {
        behind.insert(peer);
        continue;
      }
      // The peer's operations on the same group: did it reach this one, and was it the same?
      const json* same = nullptr;
      uint64_t highest = 0;
      bool any = false;
      for (const json& o : it->second.ops)
        if (o["group"] == op["group"] && o["op"] != "send" && o["op"] != "recv") {
          highest = std::max(highest, o["seq"].get<uint64_t>()), any = true;
          if (o["seq"].get<uint64_t>() == seq) same = &o;
        }
      if (!same && (!any || highest < seq)) {
        behind.insert(peer);
        findings.push_back(
            fmt::format("rank {} has not reached {} that rank {} waits in{}", peer, op_text(op), rank,
                        it->second.stuck ? ": it waits in " + op_text(*it->second.stuck) : ""));
      } else if (same && ((*same)["op"] != op["op"] || (*same)["bytes"] != op["bytes"]) &&
                 op["op"] != "send" && op["op"] != "recv") {
        findings.push_back(fmt::format(
            "mismatched operation #{} on world ranks {}: rank {} called {} of {} bytes, "
            "rank {} called {} of {} bytes (the ranks issued collectives in a different "
            "order or with different sizes)",
            seq, group_text(op["group"]), rank, op["op"].get<std::string>(), op["bytes"].get<uint64_t>(),
            peer, (*same)["op"].get<std::string>(), (*same)["bytes"].get<uint64_t>()));
      }
    }
  }
  for (int r = 0; r < world; ++r)
    if (!recs.count(r) && behind.count(r))
      findings.insert(
          findings.begin(),
          fmt::format("rank {} left no flight record: it never reached its own timeout, so it was "
                      "stopped, dead or busy outside communication (look at that rank's host)",
                      r));
  for (const std::string& f : findings) std::printf("%s\n", f.c_str());
  if (behind.empty()) {
    std::printf("no rank is behind in the records; see the mismatches above, if any\n");
  } else {
    std::printf("rank(s) behind:");
    for (int r : behind) std::printf(" %d", r);
    std::printf("\n");
  }
  return 0;
}

}  // namespace ff::cli
