#include "ckpt/sharded_run.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "ckpt/sharded_compat.h"
#include "ckpt/sharded_manifest.h"
#include "io/atomic_file.h"
#include "io/file_reader.h"

namespace ff {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLatestName = "latest";

// step_N -> N; nullopt for any other name (step_N.tmp, stray files).
std::optional<int64_t> parse_step_name(const std::string& name) {
  if (name.rfind("step_", 0) != 0 || name.size() == 5 || name.size() > 5 + 18) return std::nullopt;
  for (size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
  return std::stoll(name.substr(5));
}

// Every step_N folder in run_dir, newest first.
std::vector<int64_t> step_folders(const std::string& run_dir) {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir, ec)) {
    auto s = parse_step_name(e.path().filename().string());
    if (s && e.is_directory()) steps.push_back(*s);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

std::string read_latest(const std::string& run_dir) {
  const fs::path p = fs::path(run_dir) / kLatestName;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec) || fs::file_size(p, ec) > 64) return "";
  FileReader f(p.string(), "checkpoint pointer", "delete it: the step folders are scanned instead");
  std::string s(f.size(), '\0');
  f.read_at(0, s.data(), s.size());
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::string step_dir_path(const std::string& run_dir, int64_t step) {
  if (step < 0) throw std::invalid_argument("checkpoint step must be >= 0");
  return (fs::path(run_dir) / ("step_" + std::to_string(step))).string();
}

std::string prepare_step_dir(const std::string& run_dir, int64_t step) {
  const std::string dir = step_dir_path(run_dir, step);
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    fs::remove(fs::path(dir) / kManifestName, ec);
    fs::remove_all(dir, ec);
    if (ec)
      throw std::runtime_error("cannot remove the earlier attempt " + dir + ": " + ec.message() +
                               "; delete it by hand and retry");
  }
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create checkpoint folder " + dir + ": " + ec.message() +
                             "; check that the run folder is writable");
  return dir;
}

std::string incomplete_reason(const std::string& step_dir) {
  std::error_code ec;
  if (!fs::exists(fs::path(step_dir) / kManifestName, ec))
    return "no manifest.json (the save did not finish)";
  try {
    const Manifest m = read_manifest(step_dir);
    const auto folder_step = parse_step_name(fs::path(step_dir).filename().string());
    if (folder_step && *folder_step != m.info.step)
      return "its manifest is for step " + std::to_string(m.info.step);
    for (const auto& f : m.files) {
      const fs::path path = fs::path(step_dir) / f.file;
      if (!fs::exists(path, ec)) return f.file + " is missing";
      FileReader r(path.string(), "checkpoint data file", kDamagedCheckpointFix);
      if (r.size() != f.bytes)
        return f.file + " has " + std::to_string(r.size()) + " bytes, the manifest records " +
               std::to_string(f.bytes) + (r.size() < f.bytes ? " (truncated)" : "");
      unsigned char header[kShardHeaderBytes];
      r.read_at(0, header, sizeof(header));
      const std::string bad = check_shard_header(header, f.rank, m.info.step);
      if (!bad.empty()) return f.file + ": " + bad;
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> publish_checkpoint(const std::string& run_dir, int64_t step, int keep) {
  if (keep < 1)
    throw std::invalid_argument("keep_checkpoints must be at least 1, got " + std::to_string(keep));
  const std::string dir = step_dir_path(run_dir, step);
  const std::string why = incomplete_reason(dir);
  if (!why.empty())
    throw std::runtime_error("cannot publish " + dir + ": " + why +
                             "; call publish_checkpoint only after write_manifest succeeded");
  write_file_atomic((fs::path(run_dir) / kLatestName).string(),
                    fs::path(dir).filename().string() + "\n");
  std::vector<std::string> removed;
  int kept = 1;
  for (int64_t s : step_folders(run_dir)) {
    if (s == step) continue;
    const std::string d = step_dir_path(run_dir, s);
    if (s < step && kept < keep && incomplete_reason(d).empty()) {
      ++kept;
      continue;
    }
    std::error_code ec;
    fs::remove(fs::path(d) / kManifestName, ec);  // first, so a half-deleted folder is incomplete
    fs::remove_all(d, ec);
    removed.push_back(d);
  }
  return removed;
}

std::optional<CompleteCheckpoint> find_latest_complete(const std::string& run_dir,
                                                       std::optional<int64_t> below) {
  CompleteCheckpoint out;
  const std::string latest = read_latest(run_dir);
  const auto latest_step = parse_step_name(latest);
  if (latest_step && (!below || *latest_step < *below)) {
    const std::string why = incomplete_reason(step_dir_path(run_dir, *latest_step));
    if (why.empty()) return CompleteCheckpoint{step_dir_path(run_dir, *latest_step), *latest_step, {}};
    out.skipped.push_back(latest + " (named by latest): " + why);
  }
  for (int64_t s : step_folders(run_dir)) {
    if ((below && s >= *below) || (latest_step && s == *latest_step)) continue;
    const std::string d = step_dir_path(run_dir, s);
    const std::string why = incomplete_reason(d);
    if (why.empty()) {
      out.dir = d;
      out.step = s;
      return out;
    }
    out.skipped.push_back("step_" + std::to_string(s) + ": " + why);
  }
  // Starting afresh over an old-format checkpoint would silently discard it: refuse instead.
  refuse_single_file_checkpoint(run_dir);
  return std::nullopt;
}

std::vector<std::string> damaged_step_dirs(const std::string& run_dir, int64_t above) {
  std::vector<std::string> out;
  std::error_code ec;
  for (int64_t s : step_folders(run_dir))
    if (s > above && fs::exists(fs::path(step_dir_path(run_dir, s)) / kManifestName, ec))
      out.push_back(step_dir_path(run_dir, s));
  return out;
}

std::vector<std::string> set_aside_damaged(const std::string& run_dir, int64_t resumed_step) {
  std::vector<std::string> moved;
  for (const std::string& d : damaged_step_dirs(run_dir, resumed_step)) {
    std::error_code ec;
    std::string to = d + ".damaged";
    for (int k = 2; fs::exists(to, ec); ++k) to = d + ".damaged." + std::to_string(k);
    fs::rename(d, to, ec);
    if (ec)
      throw std::runtime_error("cannot set the damaged checkpoint " + d + " aside as " + to + ": " +
                               ec.message() + "; move it out of the run folder by hand and retry");
    moved.push_back(to);
  }
  return moved;
}

}  // namespace ff
