#include "ckpt/sharded_compat.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace ff {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_single_file_checkpoint(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in.gcount() == 8 && std::string(magic, 8) == "FFCHKPNT";
}

void refuse_single_file_checkpoint(const std::string& path) {
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) file = (fs::path(path) / "checkpoint.bin").string();
  if (!is_single_file_checkpoint(file)) return;
  throw std::runtime_error(
      file + " is a checkpoint in the old single-file format (FFCHKPNT), which this build no longer "
      "reads: it loads only sharded checkpoints (step_N/ folders with a manifest.json). Finish or "
      "export that run with the fivefold build that wrote it, or start a new run in another folder");
}

namespace {

std::string show(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

void walk(const std::string& at, const json& a, const json& b, std::vector<std::string>& out) {
  const std::string name = at.empty() ? "(the whole config)" : at;
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      const std::string sub = at.empty() ? k : at + "." + k;
      if (b.contains(k))
        walk(sub, v, b.at(k), out);
      else
        out.push_back(sub + ": " + show(v) + " in the checkpoint, absent in this run");
    }
    for (const auto& [k, v] : b.items())
      if (!a.contains(k))
        out.push_back((at.empty() ? k : at + "." + k) + ": absent in the checkpoint, " + show(v) +
                      " in this run");
  } else if (a != b) {
    out.push_back(name + ": " + show(a) + " in the checkpoint, " + show(b) + " in this run");
  }
}

}  // namespace

std::string describe_config_difference(const json& saved, const json& current, size_t max_lines) {
  std::vector<std::string> lines;
  walk("", saved, current, lines);
  std::string out;
  for (size_t i = 0; i < lines.size() && i < max_lines; ++i) out += (i ? "\n" : "") + lines[i];
  if (lines.size() > max_lines)
    out += "\n... and " + std::to_string(lines.size() - max_lines) + " more";
  return out;
}

void require_same_config(const std::string& step_dir, const json& saved, const json& current) {
  const std::string diff = describe_config_difference(saved, current);
  if (diff.empty()) return;
  throw std::runtime_error("checkpoint " + step_dir + " was saved by a different model:\n" + diff +
                           "\npoint the run at a checkpoint of this model, or set the config to "
                           "match the checkpoint's");
}

}  // namespace ff
